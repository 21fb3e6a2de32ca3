"""--dry-run estimates and calls nothing; --max-cost stops starting calls before the estimated spend passes it."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.core.management import CommandError

from annotator.judges.engine.budget import CAP_MAX_TOKENS, input_tokens
from annotator.judges.engine.runner import batch_items, render_items
from annotator.judges.engine.templates import load_template
from annotator.models import Batch, JudgeCall
from tests.factories import make_batch
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

RULE = "hub_answer_correctness"


def test_input_tokens_follow_the_stated_rule():
    assert input_tokens(
        [{"role": "system", "content": "abcd" * 25}, {"role": "user", "content": "abcde"}]
    ) == (25 + 4) + (2 + 4)


@pytest.mark.django_db
def test_dry_run_counts_calls_tokens_and_cost_and_calls_nothing(capsys):
    make_batch("dry", n_items=5)
    batch = Batch.objects.get(name="dry")
    tasks = render_items(batch_items(batch), load_template(RULE), batch.rubric_obj)
    expected_in = sum(input_tokens(t.messages) for t in tasks)
    with FakeJudge() as fake:
        run_judge(fake, "dry", "--dry-run", "--price-in", "2", "--price-out", "10")
        out = capsys.readouterr().out
        assert fake.calls == 0 and not JudgeCall.objects.exists()
        assert "5 calls to pay for, 0 more served from the cache" in out
        assert f"Estimated {expected_in:,} input tokens (1 token per 4 characters" in out
        assert "1,000 output tokens (200 per call (no earlier answers" in out
        assert f"estimated cost {(expected_in * 2 + 1000 * 10) / 1e6:.4f}" in out
        run_judge(
            fake, "dry", "--judge", "A", "--limit", "2"
        )  # two answered: the cache serves them, the mean is known
        capsys.readouterr()
        run_judge(fake, "dry", "--dry-run")
        out = capsys.readouterr().out
        assert "3 calls to pay for, 2 more served from the cache" in out and "no cost estimate" in out
        seen = JudgeCall.objects.filter(judge__name="A")
        mean = round(sum(c.tokens_out for c in seen) / 2)
        assert f"{3 * mean:,} output tokens ({mean} per call, the mean of this model's earlier answers" in out
        run_judge(fake, "dry", "--dry-run", "--max-tokens", "50")  # another request body: nothing cached
        out = capsys.readouterr().out
        assert (
            "5 calls to pay for, 0 more served" in out
            and "250 output tokens (--max-tokens 50 per call" in out
        )
        assert fake.calls == 2


@pytest.mark.django_db
def test_a_price_file_without_the_model_says_which(tmp_path):
    make_batch("pf", n_items=1)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o": {"input": 2.5, "output": 10}}))
    with FakeJudge() as fake, pytest.raises(CommandError, match="has no entry for model \u201cfake-1\u201d"):
        run_judge(fake, "pf", "--dry-run", "--prices", str(prices))
    with (
        FakeJudge() as fake,
        pytest.raises(CommandError, match="--max-cost needs a positive amount and prices"),
    ):
        run_judge(fake, "pf", "--max-cost", "1")
    assert fake.calls == 0


@pytest.mark.django_db
def test_max_cost_stops_starting_calls_keeps_what_was_paid_and_a_rerun_continues(capsys):
    make_batch("cap", n_items=12)
    price = ["--price-in", "1000", "--price-out", "1000"]  # 0.001 per token
    batch = Batch.objects.get(name="cap")
    one = input_tokens(render_items(batch_items(batch, 1), load_template(RULE), batch.rubric_obj)[0].messages)
    reserved = (one + CAP_MAX_TOKENS) * 0.001  # the first call's estimate: its max_tokens bound
    answered = (
        one + 14
    ) * 0.001  # a real call (the fake answers 14 tokens): the estimate once answers are back
    cap = round(reserved + answered * 3.5, 4)
    with FakeJudge(latency=0.02) as fake:
        with pytest.raises(CommandError, match="stopped at --max-cost") as stopped:
            run_judge(fake, "cap", "--judge", "A", "--concurrency", "1", "--max-cost", str(cap), *price)
        assert stopped.value.returncode == 3
        out = capsys.readouterr().out
        assert "stopped starting calls at the cost cap" in out and "stopped early" in out
        paid = list(JudgeCall.objects.filter(judge__name="A"))
        spent = sum((c.tokens_in + c.tokens_out) * 0.001 for c in paid)
        assert 0 < len(paid) < 12 and fake.calls == len(paid) and all(c.status == "ok" for c in paid)
        assert spent <= cap
        # A rerun with a higher cap (so the same max_tokens bound) continues with the calls that are left.
        run_judge(fake, "cap", "--judge", "A", "--concurrency", "4", "--max-cost", "1000", *price)
        assert fake.calls == 12 and JudgeCall.objects.filter(judge__name="A", status="ok").count() == 12


@pytest.mark.django_db
def test_max_cost_counts_calls_in_flight():
    """16 could start at once; each call in flight is reserved at its max_tokens bound, so only 3 fit at a
    time, and the others wait until answers come back (the run then goes on at their real cost)."""
    make_batch("fly", n_items=20)
    batch = Batch.objects.get(name="fly")
    one = input_tokens(render_items(batch_items(batch, 1), load_template(RULE), batch.rubric_obj)[0].messages)
    per_call = (one + CAP_MAX_TOKENS) * 0.001
    lock, now, most = threading.Lock(), [0], [0]

    def slow(prompt):
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.2)
        with lock:
            now[0] -= 1
        return '{"score": 0.75, "reason": "Mostly answers the request."}'

    with FakeJudge(reply=slow) as fake:
        with pytest.raises(CommandError, match="stopped at --max-cost"):
            run_judge(
                fake,
                "fly",
                "--judge",
                "A",
                "--concurrency",
                "16",
                "--max-cost",
                str(round(per_call * 3.5, 4)),
                "--price-in",
                "1000",
                "--price-out",
                "1000",
            )
    assert most[0] == 3
    spent = sum((c.tokens_in + c.tokens_out) * 0.001 for c in JudgeCall.objects.filter(judge__name="A"))
    assert 3 < fake.calls < 20 and spent <= per_call * 3.5
