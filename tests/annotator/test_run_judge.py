"""run_judge against a fake OpenAI-compatible endpoint on 127.0.0.1 (no external network)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import CommandError, call_command

from annotator.judging.client import ChatClient, JudgeCallError
from annotator.judging.templates import available_templates, load_template
from annotator.models import JudgeFailure, JudgeScore
from tests.factories import make_batch


class FakeEndpoint:
    """Answers /chat/completions with a script: per item text, a list of statuses to return first."""

    def __init__(self, reply, failures=None):
        self.reply = reply  # function(user_prompt) -> str
        self.failures = dict(failures or {})  # marker in prompt -> list of HTTP statuses to send first
        self.requests = []
        self.lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                with endpoint.lock:
                    endpoint.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                    status = None
                    for marker, statuses in endpoint.failures.items():
                        if marker in prompt and statuses:
                            status = statuses.pop(0)
                            break
                if status is not None:
                    self.send_response(status)
                    if status == 429:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b'{"error": "busy"}')
                    return
                payload = {"choices": [{"message": {"role": "assistant", "content": endpoint.reply(prompt)}}]}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _reply(prompt):
    if "answer 2)" in prompt:
        return "I cannot decide on a number here, sorry."
    if "answer 1)" in prompt:
        return 'Verdict:\n```json\n{"score": 0.25, "reason": "Misses the rain."}\n```'
    return '{"score": 1.0, "reason": "Fully answers the request."}'


def test_shipped_templates_load():
    names = available_templates()
    assert {"hcs_rubric", "answer_correctness", "reference_answer", "user_frustration", "live_coach_feedback"} <= set(names)
    for name in names:
        template = load_template(name)
        assert template.render({"input": "in", "output": "out"})[-1]["content"]
    assert load_template("user_frustration").scale.higher_is_better is False
    assert load_template("live_coach_feedback").scale.label == "1–4"


@pytest.mark.django_db
def test_run_judge_scores_retries_and_lists_failures(monkeypatch, capsys):
    batch = make_batch("run", n_items=4)
    monkeypatch.setenv("FAKE_JUDGE_KEY", "sk-test-123")
    failures = {"answer 0)": [429, 503], "answer 3)": [500, 500, 500, 500, 500, 500]}
    with FakeEndpoint(_reply, failures) as endpoint:
        call_command(
            "run_judge", "run", "--template", "answer_correctness", "--base-url", endpoint.url,
            "--model", "fake-1", "--api-key-env", "FAKE_JUDGE_KEY", "--concurrency", "3",
            "--max-retries", "2", "--backoff", "0.01",
        )
    out, err = capsys.readouterr()
    assert "[##############################] 4/4" in err
    assert "2 scores on 4 items" in out and "2 retries" in out and "2 failure(s)" in out
    assert "FAILED run-2 [overall]: no JSON object and no 'score: N' line" in out
    assert "FAILED run-3: call failed: HTTP 500 after 3 attempts" in out
    scores = {s.item.item_id: s for s in JudgeScore.objects.select_related("item", "judge")}
    assert set(scores) == {"run-0", "run-1"}
    assert (scores["run-0"].value, scores["run-1"].value) == (5.0, 2.0)
    assert scores["run-1"].raw_output.startswith("Verdict:")
    assert scores["run-1"].reason == "Misses the rain."
    judge = scores["run-0"].judge
    assert (judge.name, judge.model, judge.template, judge.template_version) == (
        "answer_correctness/fake-1", "fake-1", "answer_correctness", "1",
    )
    stored = JudgeFailure.objects.get(item__item_id="run-2")
    assert stored.raw_output == "I cannot decide on a number here, sorry."
    assert all(r["auth"] == "Bearer sk-test-123" for r in endpoint.requests)
    assert all(r["path"] == "/v1/chat/completions" and r["body"]["model"] == "fake-1" for r in endpoint.requests)


@pytest.mark.django_db
def test_run_judge_rubric_template_scores_every_dimension():
    batch = make_batch("rub", n_items=2)
    dims = batch.rubric_obj.dimension_keys

    def reply(prompt):
        assert "coherence (Coherence)" in prompt  # the rubric is rendered into the prompt
        return json.dumps({d: {"score": 4, "reasoning": "ok"} for d in dims})

    with FakeEndpoint(reply) as endpoint:
        call_command("run_judge", "rub", "--template", "hcs_rubric", "--base-url", endpoint.url, "--model", "m")
    assert JudgeScore.objects.count() == 2 * len(dims)
    assert set(JudgeScore.objects.values_list("value", flat=True)) == {4.0}


def test_client_does_not_retry_a_400():
    with FakeEndpoint(_reply, {"x": [400]}) as endpoint:
        client = ChatClient(base_url=endpoint.url, model="m", backoff=0.0)
        with pytest.raises(JudgeCallError, match="HTTP 400"):
            client.complete([{"role": "user", "content": "x"}])
        assert len(endpoint.requests) == 1


def test_client_backs_off_exponentially():
    waits = []
    with FakeEndpoint(_reply, {"x": [502, 502, 502]}) as endpoint:
        client = ChatClient(base_url=endpoint.url, model="m", backoff=0.5, max_retries=3, sleep=waits.append)
        text, retries = client.complete([{"role": "user", "content": "x"}])
    assert retries == 3 and text.startswith("{")
    assert waits == [0.5, 1.0, 2.0]


@pytest.mark.django_db
def test_run_judge_errors():
    make_batch("e", n_items=1)
    with pytest.raises(CommandError, match="no template 'nope'; shipped: answer_correctness"):
        call_command("run_judge", "e", "--template", "nope", "--base-url", "http://127.0.0.1:9", "--model", "m")
    with pytest.raises(CommandError, match="no batch named"):
        call_command("run_judge", "zzz", "--template", "hcs_rubric", "--base-url", "http://127.0.0.1:9", "--model", "m")


@pytest.mark.django_db
def test_thread_variable_ends_at_the_last_user_message():
    from annotator.judging.templates import item_variables

    batch = make_batch("th", n_items=2)
    single, thread = batch.items.order_by("position")
    rubric = batch.rubric_obj
    assert item_variables(single, rubric)["thread"] == f"user: {single.prompt}"
    thread.prompt, thread.response = "why so slow??", "Slow first."
    thread.conversation = [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "why so slow??"}, {"role": "assistant", "content": "Slow first."},
    ]
    assert item_variables(thread, rubric)["thread"] == "user: hi\nassistant: Hello\nuser: why so slow??"
    rendered = load_template("user_frustration").render(item_variables(thread, rubric))[-1]["content"]
    assert rendered.count("why so slow??") == 1 and "Slow first." not in rendered
