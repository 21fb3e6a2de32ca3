"""An OpenAI-compatible chat-completions client: httpx for the transport, tenacity for the retries.

Retries (exponential backoff with full jitter, ``Retry-After`` honoured) on 408/409/425/429/5xx,
connection errors, truncated bodies, bodies that trickle past the deadline and 200 responses that are
not a chat completion. ``timeout`` is a deadline for each whole request (headers and body), not per
read. 401/403 and an unknown model raise ``JudgeRunFatal``: no later call can succeed, so the run
ends with one message. Every error text passes through ``mask_secrets`` before it is kept.
"""

from __future__ import annotations

import email.utils
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
BODY_KEPT = 2000  # characters of an error body kept with the call
_KEYLIKE = re.compile(r"(sk-|Bearer\s+)[A-Za-z0-9_\-.]{6,}")


def mask_secrets(text: str, api_key: str = "") -> str:
    """``text`` with the API key and anything shaped like one (``sk-…``, ``Bearer …``) masked."""
    text = str(text or "")
    if api_key:
        text = text.replace(api_key, "***")
    return _KEYLIKE.sub(lambda m: m.group(1) + "***", text)


class JudgeCallError(RuntimeError):
    """One call gave no usable answer after its retries; the run goes on to the next item."""

    def __init__(self, message: str, *, attempts: int = 1, body: str = "", status: int | None = None):
        super().__init__(message)
        self.attempts, self.body, self.status = attempts, body, status


class JudgeRunFatal(RuntimeError):
    """No call of this run can succeed (the key is refused, the model does not exist): stop the run."""


class RunStopped(RuntimeError):
    """The run was asked to stop while this call waited to retry; the call is left for the next run."""


class _Retryable(Exception):
    def __init__(self, reason: str, *, body: str = "", status: int | None = None, retry_after: float | None = None):
        super().__init__(reason)
        self.body, self.status, self.retry_after = body, status, retry_after


@dataclass(frozen=True)
class CallResult:
    text: str
    attempts: int
    latency: float  # seconds, every attempt and wait included
    tokens_in: int | None = None
    tokens_out: int | None = None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date (RFC 9110 §10.2.3). None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class ChatClient:
    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0  # the first retry waits up to this many seconds; the ceiling doubles each time
    max_backoff: float = 30.0
    temperature: float = 0.0
    max_tokens: int | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    sleep: Callable[[float], None] | None = None  # for tests; default waits on ``stop``
    transport: httpx.BaseTransport | None = None
    _http: httpx.Client | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"

    @property
    def params(self) -> dict[str, Any]:
        """What is sent besides the messages: stored with every call (never the key)."""
        params: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        return params

    def _client(self) -> httpx.Client:
        with self._lock:
            if self._http is None:
                limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
                self._http = httpx.Client(timeout=httpx.Timeout(self.timeout), limits=limits, transport=self.transport)
            return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def _wait(self, seconds: float) -> None:
        if self.sleep is not None:
            self.sleep(seconds)
        else:
            self.stop.wait(seconds)

    def _backoff(self, state) -> float:
        exc = state.outcome.exception()
        if isinstance(exc, _Retryable) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_backoff)
        return wait_random_exponential(multiplier=self.backoff, max=self.max_backoff)(state)

    def complete(self, messages: list[dict[str, str]]) -> CallResult:
        """The reply to ``messages``. Raises JudgeCallError, JudgeRunFatal or RunStopped."""
        body = {"model": self.model, "messages": messages, **self.params}
        started = time.monotonic()
        attempts = 0

        def attempt() -> dict:
            nonlocal attempts
            if self.stop.is_set():
                raise RunStopped("stopped before the call")
            attempts += 1
            try:
                return self._post(body)
            except (JudgeCallError, JudgeRunFatal):
                raise
            except RuntimeError:  # the client was closed under us: a second Ctrl-C dropping calls in flight
                if self.stop.is_set():
                    raise RunStopped("the call in flight was dropped") from None
                raise

        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._backoff,
            retry=retry_if_exception_type(_Retryable),
            sleep=self._wait,
            reraise=True,
        )
        try:
            payload = retrying(attempt)
        except _Retryable as exc:
            raise JudgeCallError(
                f"{exc} after {attempts} attempt{'s' if attempts != 1 else ''}",
                attempts=attempts, body=exc.body, status=exc.status,
            ) from None
        except JudgeCallError as exc:
            exc.attempts = attempts
            raise
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        return CallResult(
            text=payload["_text"], attempts=attempts, latency=time.monotonic() - started,
            tokens_in=_int(usage.get("prompt_tokens")), tokens_out=_int(usage.get("completion_tokens")),
        )

    def _post(self, body: dict) -> dict:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        deadline = time.monotonic() + self.timeout
        try:
            with self._client().stream("POST", self.url, json=body, headers=headers) as response:
                chunks = []
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise _Retryable(f"no complete answer within the {self.timeout:g} s deadline")
                raw = b"".join(chunks)
        except httpx.TimeoutException:
            raise _Retryable(f"no complete answer within the {self.timeout:g} s deadline") from None
        except httpx.RemoteProtocolError as exc:
            raise _Retryable(f"truncated response ({exc})") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection failed ({type(exc).__name__}: {exc})") from None
        text = mask_secrets(raw.decode("utf-8", "replace"), self.api_key)
        return self._read(response, text)

    def _read(self, response: httpx.Response, text: str) -> dict:
        status = response.status_code
        if status in (401, 403):
            raise JudgeRunFatal(
                f"the endpoint refused the API key (HTTP {status}) at {self.url}: {text[:300]}"
            )
        if status == 404 or (status in (400, 422) and "model" in text.lower() and "not" in text.lower()):
            raise JudgeRunFatal(
                f"the endpoint does not know model \u201c{self.model}\u201d or the URL {self.url} "
                f"(HTTP {status}): {text[:300]}"
            )
        if status in RETRY_STATUSES:
            raise _Retryable(
                f"HTTP {status}", body=text[:BODY_KEPT], status=status,
                retry_after=retry_after_seconds(response.headers.get("Retry-After")),
            )
        if status >= 400:
            raise JudgeCallError(f"HTTP {status}: {text[:300]}", body=text[:BODY_KEPT], status=status)
        try:
            payload = json.loads(text)
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise _Retryable(
                "the endpoint answered 200 with something that is not a chat completion",
                body=text[:BODY_KEPT], status=status,
            ) from None
        if not isinstance(payload, dict):
            raise _Retryable("the endpoint answered 200 with a JSON that is not an object", body=text[:BODY_KEPT])
        payload["_text"] = str(content or "")
        return payload


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
