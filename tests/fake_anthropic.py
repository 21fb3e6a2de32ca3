"""A local Anthropic Messages API (``POST /v1/messages``) for the judge tests; binds 127.0.0.1 on a free port.

It checks ``x-api-key`` (when ``key`` is set) and ``anthropic-version``, answers with content blocks and
``usage.input_tokens``/``output_tokens``, and errs as Anthropic does: 401 ``authentication_error``, 404
``not_found_error`` for a model in ``unknown``, ``fault(number)`` → 429 ``rate_limit_error`` / 529
``overloaded_error``, and ``stop_reason: "refusal"`` for prompts ``refuses`` picks.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.local_server import LocalServer

ERROR_TYPES = {
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
    400: "invalid_request_error",
    500: "api_error",
}


class FakeAnthropic(LocalServer):
    def __init__(
        self,
        reply: Callable[[str], str] = lambda prompt: '{"score": 0.75, "reason": "Mostly answers."}',
        *,
        key: str = "",
        unknown: frozenset[str] = frozenset(),
        fault: Callable[[int], int | None] | None = None,
        refuses: Callable[[str], bool] | None = None,
    ):
        self.reply, self.key, self.unknown, self.fault, self.refuses = reply, key, unknown, fault, refuses
        self.calls = 0
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self._serve(self._handler())

    @property
    def url(self) -> str:
        return self.origin

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _error(self, status: int, message: str, headers: dict | None = None) -> None:
                self._json(
                    status,
                    {"type": "error", "error": {"type": ERROR_TYPES[status], "message": message}},
                    headers,
                )

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.calls += 1
                    number = fake.calls
                    fake.requests.append(
                        {
                            "path": self.path,
                            "key": self.headers.get("x-api-key"),
                            "version": self.headers.get("anthropic-version"),
                            "body": body,
                        }
                    )
                if self.path != "/v1/messages":
                    return self._error(404, f"no route {self.path}")
                if fake.key and self.headers.get("x-api-key") != fake.key:
                    return self._error(401, "invalid x-api-key")
                if not self.headers.get("anthropic-version"):
                    return self._error(400, "anthropic-version header is required")
                if "max_tokens" not in body:
                    return self._error(400, "max_tokens: Field required")
                if body.get("model") in fake.unknown:
                    return self._error(404, f"model: {body['model']}")
                status = fake.fault(number) if fake.fault else None
                if status:
                    return self._error(status, f"fault {status}", {"retry-after": "0"})
                prompt = body["messages"][-1]["content"][0]["text"]
                refused = bool(fake.refuses and fake.refuses(prompt))
                text = "" if refused else fake.reply(prompt)
                self._json(
                    200,
                    {
                        "id": f"msg_{number}",
                        "type": "message",
                        "role": "assistant",
                        "model": body["model"],
                        "content": [{"type": "text", "text": text}] if text else [],
                        "stop_reason": "refusal" if refused else "end_turn",
                        "usage": {
                            "input_tokens": len(prompt) // 4 + len(body.get("system", "")) // 4,
                            "output_tokens": len(text) // 4,
                        },
                    },
                )

        return Handler
