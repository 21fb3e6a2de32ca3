"""A minimal OpenAI-compatible chat-completions client with retries and backoff (standard library only)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}


class JudgeCallError(RuntimeError):
    """The endpoint did not give a usable answer after all retries."""


@dataclass
class ChatClient:
    base_url: str
    model: str
    api_key: str = ""
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    max_backoff: float = 30.0
    temperature: float = 0.0
    sleep: Callable[[float], None] = time.sleep

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"

    def _post(self, body: bytes) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return json.loads(response.read().decode("utf-8"))

    def complete(self, messages: list[dict[str, str]]) -> tuple[str, int]:
        """The reply's text and how many retries it took. Raises JudgeCallError."""
        body = json.dumps({"model": self.model, "messages": messages, "temperature": self.temperature}).encode()
        last = ""
        for attempt in range(self.max_retries + 1):
            wait = min(self.backoff * 2**attempt, self.max_backoff)
            try:
                payload = self._post(body)
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
                if exc.code not in RETRY_STATUSES:
                    detail = exc.read().decode("utf-8", "replace")[:200]
                    raise JudgeCallError(f"{last}: {detail}") from None
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    wait = min(float(retry_after), self.max_backoff)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"connection failed ({getattr(exc, 'reason', exc)})"
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise JudgeCallError("the endpoint answered with something that is not JSON") from None
            else:
                try:
                    return str(payload["choices"][0]["message"]["content"] or ""), attempt
                except (KeyError, IndexError, TypeError):
                    raise JudgeCallError("the endpoint's JSON has no choices[0].message.content") from None
            if attempt < self.max_retries:
                self.sleep(wait)
        raise JudgeCallError(f"{last} after {self.max_retries + 1} attempts")
