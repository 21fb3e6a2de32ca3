"""A local OpenAI-compatible /chat/completions endpoint that answers slowly and breaks on purpose.

Used by the judge tests and ``bench/judge_run_bench.py``; binds 127.0.0.1 on a free port. ``fault``
decides, per call number (1-based, in arrival order) and prompt, what goes wrong: an HTTP status
(``429`` with ``Retry-After: 0``, ``500``, ``401``, ``404``), ``"truncated"`` (the body stops halfway and
the connection closes), ``"malformed"`` (a 200 that is not a chat completion) or ``"trickle"`` (one
byte of the body every ``trickle`` seconds). ``answered`` counts, per prompt, the 200 answers sent.

``refuse`` names request parameters the endpoint answers 400 to, worded as OpenAI words them:
``temperature`` (any value but 1), ``max_tokens``, ``response_format`` and ``logprobs``. An answer longer than
the request's ``max_tokens`` (4 characters a token) is cut there, as a provider cuts it. ``score_probs``
gives, per prompt, the alternatives of the score token ({"4": 0.6, "5": 0.3, ...}) returned when a
request asks for logprobs; every other token is certain.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.local_server import LocalServer


def every_fifth(number: int, prompt: str) -> str | int | None:
    """A 429, a 500 and a truncated body in turn on every 5th call."""
    if number % 5:
        return None
    return (429, 500, "truncated")[(number // 5 - 1) % 3]


def every_nth(n: int, status: int | str = 500) -> Callable[[int, str], str | int | None]:
    """``status`` on every n-th call (which a retry then answers)."""
    return lambda number, prompt: status if number % n == 0 else None


def always(status: int | str) -> Callable[[int, str], str | int | None]:
    return lambda number, prompt: status


def labelled(
    label: str, number: int | None = None, reason: str = "Clear and specific."
) -> Callable[[str], str]:
    """A free-text verdict as the seed's rubric prints one: ``**3 (Very Good)** → reason``, or the label alone."""
    head = f"**{number} ({label})**" if number is not None else f"**{label}**"
    return lambda prompt: f"{head} \u2192 {reason}"


def thinking(answer: str, thought: str = "Maybe Score: 0.2? No, it answers fully.") -> Callable[[str], str]:
    """A reasoning model's answer: a <think> block (with a decoy score) before the real one."""
    return lambda prompt: f"<think>{thought}</think>\n{answer}"


REFUSALS = {
    "temperature": (
        "unsupported_value",
        (
            "Unsupported value: 'temperature' does not support 0 with this model. "
            "Only the default (1) value is supported."
        ),
    ),
    "max_tokens": (
        "unsupported_parameter",
        (
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead."
        ),
    ),
    "response_format": (
        "unsupported_parameter",
        ("Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."),
    ),
    "logprobs": (
        "unsupported_parameter",
        "Unsupported parameter: 'logprobs' is not supported with this model.",
    ),
}


def _refused(body: dict, refuse: frozenset[str]) -> str | None:
    for param in sorted(refuse):
        if param == "temperature" and "temperature" in body and body["temperature"] != 1:
            return param
        if param != "temperature" and param in body:
            return param
    return None


def _tokens(text: str) -> list[str]:
    return re.findall(r"\s*(?:\d|[A-Za-z]+|[^\sA-Za-z\d])", text) or [text]


def _logprobs(text: str, probs: dict[str, float] | None, top: int) -> dict:
    """``choices[0].logprobs`` for ``text``: the last single-digit token of the answer gets ``probs``."""
    tokens = _tokens(text)
    digits = [i for i, t in enumerate(tokens) if t.strip().isdigit()]
    content = []
    for i, token in enumerate(tokens):
        alternatives = [(token, 0.0)]
        if probs and digits and i == digits[-1]:
            alternatives = sorted(((k, math.log(p)) for k, p in probs.items() if p > 0), key=lambda a: -a[1])
        content.append(
            {
                "token": token,
                "logprob": alternatives[0][1],
                "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alternatives[:top]],
            }
        )
    return {"content": content}


class FakeJudge(LocalServer):
    def __init__(
        self,
        reply: Callable[[str], str] = lambda prompt: (
            '{"score": 0.75, "reason": "Mostly answers the request."}'
        ),
        *,
        latency: float = 0.0,
        fault: Callable[[int, str], str | int | None] | None = None,
        trickle: float = 1.0,
        refuse: frozenset[str] | set[str] = frozenset(),
        score_probs: Callable[[str], dict[str, float] | None] | None = None,
    ):
        self.reply, self.latency, self.fault, self.trickle = reply, latency, fault, trickle
        self.refuse, self.score_probs = frozenset(refuse), score_probs
        self.calls = 0
        self.requests: list[dict] = []
        self.answered: Counter[str] = Counter()
        self.lock = threading.Lock()
        self._serve(self._handler())

    @property
    def url(self) -> str:
        return self.origin + "/v1"

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None, length: int | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body) if length is None else length))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()

            def do_GET(self):  # /stats: what the endpoint has seen, for a client in another process
                with fake.lock:
                    stats = json.dumps({"calls": fake.calls, "answered": dict(fake.answered)}).encode()
                self._send(200, stats)
                self.wfile.write(stats)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                with fake.lock:
                    fake.calls += 1
                    number = fake.calls
                    fake.requests.append(
                        {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                    )
                fault = fake.fault(number, prompt) if fake.fault else None
                refused = _refused(body, fake.refuse)
                if fake.latency:
                    time.sleep(fake.latency)
                text = fake.reply(prompt)
                # As a real endpoint does, the answer stops at the output bound the request sent.
                bound = body.get("max_tokens") or body.get("max_completion_tokens")
                if bound and len(text) // 4 > bound:
                    text = text[: bound * 4]
                choice = {"message": {"role": "assistant", "content": text}}
                if body.get("logprobs"):
                    probs = fake.score_probs(prompt) if fake.score_probs else None
                    choice["logprobs"] = _logprobs(text, probs, int(body.get("top_logprobs") or 1))
                answer = json.dumps(
                    {
                        "choices": [choice],
                        "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4},
                    }
                ).encode()
                if refused and fault is None:
                    code, message = REFUSALS[refused]
                    error = json.dumps(
                        {
                            "error": {
                                "message": message,
                                "type": "invalid_request_error",
                                "param": refused,
                                "code": code,
                            }
                        }
                    ).encode()
                    self._send(400, error)
                    self.wfile.write(error)
                elif isinstance(fault, int):
                    error = json.dumps(
                        {"error": {"message": f"fault {fault}", "echo": "sk-secret-in-body-123"}}
                    ).encode()
                    self._send(fault, error, {"Retry-After": "0"} if fault == 429 else None)
                    self.wfile.write(error)
                elif fault == "truncated":
                    self._send(200, answer)
                    self.wfile.write(answer[: len(answer) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                elif fault == "malformed":
                    page = b"<html>Bad gateway</html>"
                    self._send(200, page)
                    self.wfile.write(page)
                elif fault == "trickle":
                    self._send(200, answer)
                    try:
                        for byte in answer:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(fake.trickle)
                    except OSError:  # the client gave up, as it should
                        self.close_connection = True
                else:
                    try:
                        self._send(200, answer)
                        self.wfile.write(answer)
                    except OSError:  # the client is gone (killed): nothing was delivered
                        self.close_connection = True
                        return
                    with fake.lock:
                        fake.answered[prompt] += 1

        return Handler


def main() -> None:
    """Serve in a process of its own: ``python tests/fake_judge.py --latency 0.2 --faults``; prints the URL."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument(
        "--faults", action="store_true", help="a 429, a 500 and a truncated body every 5th call"
    )
    parser.add_argument(
        "--refuse",
        action="append",
        default=[],
        choices=sorted(REFUSALS),
        help="answer 400 to requests carrying this parameter (repeatable)",
    )
    args = parser.parse_args()
    fake = FakeJudge(
        latency=args.latency, fault=every_fifth if args.faults else None, refuse=frozenset(args.refuse)
    )
    print(fake.url, flush=True)
    fake.server.serve_forever()


if __name__ == "__main__":
    main()
