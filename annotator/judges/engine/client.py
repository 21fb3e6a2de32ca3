"""An OpenAI-compatible chat-completions client: httpx for the transport, tenacity for the retries.

Retries (exponential backoff with full jitter, ``Retry-After`` honoured) on 408/409/425/429/5xx,
connection errors, truncated bodies, bodies that trickle past the deadline and 200 responses that are
not a chat completion. ``timeout`` is a deadline for each whole request (headers and body), not per
read. 401/403 and an unknown model raise ``JudgeRunFatal``: no later call can succeed, so the run
ends with one message. Every error text passes through ``mask_secrets`` before it is kept.

A 400/422 that names a parameter the model refuses is adapted to once for the whole run and the
call sent again at once: temperature is left out (the model's default), ``max_tokens`` becomes
``max_completion_tokens``, and structured outputs or logprobs are dropped. Each adaptation is kept
in ``notes`` to tell the user.
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

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})  # 529: Anthropic "overloaded"
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


class Retryable(Exception):
    """One attempt failed in a way the next may not (a 429, a 5xx, a cut connection): wait and try again."""

    def __init__(
        self, reason: str, *, body: str = "", status: int | None = None, retry_after: float | None = None
    ):
        super().__init__(reason)
        self.body, self.status, self.retry_after = body, status, retry_after


class _Refused(Exception):
    """The endpoint refused one parameter of the request (a 400/422 naming it): adapt and send again."""

    def __init__(self, param: str, said: str):
        super().__init__(param)
        self.param, self.said = param, said


@dataclass(frozen=True)
class CallResult:
    text: str
    attempts: int
    latency: float  # seconds, every attempt and wait included
    tokens_in: int | None = None
    tokens_out: int | None = None
    sent: dict[str, Any] = field(default_factory=dict)  # the sampling parameters the answered request carried
    output_mode: str = "text"  # "json_schema" when the answered request asked for structured output
    request: dict[str, Any] = field(default_factory=dict)  # every parameter the answered request carried
    logprobs: list[tuple[str, list[tuple[str, float]]]] | None = (
        None  # (token, its top alternatives), in order
    )


ADAPTABLE = ("temperature", "max_tokens", "response_format", "logprobs")
_MODEL_UNKNOWN = re.compile(
    r"model[^.]{0,80}?(does not exist|not found|not exist|unknown|no such|is not available|not supported by)"
    r"|(unknown|invalid|no such|unsupported) model|model_not_found",
    re.IGNORECASE,
)


def endpoint_said(text: str) -> str:
    """The endpoint's own error message (OpenAI's ``{"error": {"message": …}}``, or ``{"detail": …}``), else the body."""
    try:
        payload = json.loads(text)
    except ValueError:
        return text.strip()[:300]
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            for key in ("message", "detail", "error"):
                if isinstance(error.get(key), str):
                    return error[key][:300]
        elif isinstance(error, str):
            return error[:300]
    return text.strip()[:300]


def refused_param(text: str) -> str | None:
    """Which adaptable parameter a 400/422 body refuses: its ``param`` field, else the one its message names."""
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    error = payload.get("error") if isinstance(payload, dict) else None
    named = error.get("param") if isinstance(error, dict) else None
    if isinstance(named, str):
        named = named.split(".")[0].split("[")[0]
        if named == "top_logprobs":
            named = "logprobs"
        if named in ADAPTABLE:
            return named
    said = endpoint_said(text).lower()
    for param in ("response_format", "json_schema", "top_logprobs", "logprobs", "max_tokens", "temperature"):
        if re.search(rf"\b{param}\b", said) and re.search(
            r"unsupported|not support|does not support|invalid|"
            r"unrecognized|not allowed|only the default|unknown",
            said,
        ):
            return {"json_schema": "response_format", "top_logprobs": "logprobs"}.get(param, param)
    return None


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
    """The OpenAI-compatible client, and the base every provider's client extends.

    The provider contract (``annotator.judges.providers``): a provider's client sets ``provider`` and
    overrides what its API does differently: ``url`` and ``display_url``, ``params`` (what every call sends
    besides the messages), ``build_request`` (the body and its sampling parameters), ``headers`` (its
    authentication), ``read_response`` (an HTTP answer to a payload with ``_text``, raising ``Retryable``,
    ``JudgeCallError`` or ``JudgeRunFatal``) and ``usage`` (its token counts, read with ``int_or_none``).
    Its batch API sends with ``http_client()`` and ``headers()``. The retries, the adaptation to refused
    parameters and the ledger stay here.
    """

    provider = "openai"  # its name in JUDGE_PROVIDERS: part of a judge's identity and of the cache key
    # Whether a judge's identity names the provider: not for this one, so judges run before providers
    # existed keep their version.
    identity_names_provider = False

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0  # the first retry waits up to this many seconds; the ceiling doubles each time
    max_backoff: float = 30.0
    temperature: float = 0.0
    max_tokens: int | None = None
    response_format: dict[str, Any] | None = None  # a JSON schema to ask for; None: free text
    top_logprobs: int = 0  # alternatives per token to ask for; 0: no logprobs
    notes: list[str] = field(default_factory=list)  # parameters the endpoint refused, and what was done
    stop: threading.Event = field(default_factory=threading.Event)
    sleep: Callable[[float], None] | None = None  # for tests; default waits on ``stop``
    transport: httpx.BaseTransport | None = None
    _http: httpx.Client | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _dropped: set[str] = field(default_factory=set, init=False, repr=False)  # parameters the endpoint refused

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

    @property
    def display_url(self) -> str:
        """The base URL without credentials or query (which may carry a key): part of a judge's identity."""
        parts = httpx.URL(self.base_url.strip())
        base = str(parts.copy_with(userinfo=b"", query=None, fragment=None)).rstrip("/")
        return base.removesuffix("/chat/completions")

    @property
    def identity(self) -> dict[str, Any]:
        """What makes a judge version besides template and model: parameters, endpoint, and the provider
        when ``identity_names_provider``."""
        named = {"provider": self.provider} if self.identity_names_provider else {}
        return {**self.params, "base_url": self.display_url, **named}

    def build_request(self, messages: list[dict[str, str]]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the request body, its sampling parameters) with every refused parameter adapted."""
        with self._lock:
            dropped = set(self._dropped)
        sent: dict[str, Any] = {}
        if "temperature" not in dropped:
            sent["temperature"] = self.temperature
        if self.max_tokens is not None:
            sent["max_completion_tokens" if "max_tokens" in dropped else "max_tokens"] = self.max_tokens
        body = {"model": self.model, "messages": messages, **sent}
        if self.response_format is not None and "response_format" not in dropped:
            body["response_format"] = self.response_format
        if self.top_logprobs and "logprobs" not in dropped:
            body["logprobs"], body["top_logprobs"] = True, self.top_logprobs
        return body, sent

    def _adapt(self, refused: _Refused) -> None:
        param = refused.param
        with self._lock:
            if param in self._dropped:  # another call in flight was refused the same way and adapted already
                return
            self._dropped.add(param)
            what = {
                "temperature": f"calls are sent without temperature, so the model's default applies "
                f"(not {self.temperature:g})",
                "max_tokens": "calls send max_completion_tokens instead",
                "response_format": "calls ask for free text instead of structured output",
                "logprobs": "calls are sent without logprobs, so no score distribution is kept",
            }[param]
            self.notes.append(
                f"The endpoint refused {param} for model \u201c{self.model}\u201d "
                f"(\u201c{refused.said}\u201d): {what}."
            )

    def http_client(self) -> httpx.Client:
        """The one connection pool of this client, opened at the first request (the batch API uses it too)."""
        with self._lock:
            if self._http is None:
                limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
                self._http = httpx.Client(
                    timeout=httpx.Timeout(self.timeout), limits=limits, transport=self.transport
                )
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
        if isinstance(exc, Retryable) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_backoff)
        return wait_random_exponential(multiplier=self.backoff, max=self.max_backoff)(state)

    def complete(self, messages: list[dict[str, str]]) -> CallResult:
        """The reply to ``messages``. Raises JudgeCallError, JudgeRunFatal or RunStopped."""
        started = time.monotonic()
        attempts = 0
        sent: list[dict] = [{}]
        carried: list[dict] = [{}]

        def attempt() -> dict:
            nonlocal attempts
            for _ in range(len(ADAPTABLE) + 2):
                if self.stop.is_set():
                    raise RunStopped("stopped before the call")
                attempts += 1
                body, sent[0] = self.build_request(messages)
                carried[0] = request_params(body)
                try:
                    payload = self._post(body)
                except _Refused as refused:
                    self._adapt(refused)
                    continue
                except (JudgeCallError, JudgeRunFatal):
                    raise
                except (
                    RuntimeError
                ):  # the client was closed under us: a second Ctrl-C dropping calls in flight
                    if self.stop.is_set():
                        raise RunStopped("the call in flight was dropped") from None
                    raise
                payload["_mode"] = "json_schema" if "response_format" in body else "text"
                return payload
            raise JudgeCallError("the endpoint kept refusing the request's parameters")

        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._backoff,
            retry=retry_if_exception_type(Retryable),
            sleep=self._wait,
            reraise=True,
        )
        try:
            payload = retrying(attempt)
        except Retryable as exc:
            raise JudgeCallError(
                f"{exc} after {attempts} attempt{'s' if attempts != 1 else ''}",
                attempts=attempts,
                body=exc.body,
                status=exc.status,
            ) from None
        except JudgeCallError as exc:
            exc.attempts = attempts
            raise
        tokens_in, tokens_out = self.usage(payload)
        return CallResult(
            text=payload["_text"],
            attempts=attempts,
            latency=time.monotonic() - started,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            sent=sent[0],
            output_mode=payload["_mode"],
            request=carried[0],
            logprobs=_token_logprobs(payload),
        )

    def answer_from(self, status: int, text: str) -> CallResult:
        """Read an answer the batch API returned (its HTTP status and body) as one call's answer. Raises
        JudgeCallError for anything that is not a usable answer; nothing is retried here."""
        try:
            payload = self.read_response(httpx.Response(status, text=text), mask_secrets(text, self.api_key))
        except (Retryable, _Refused, JudgeRunFatal) as exc:
            raise JudgeCallError(f"the batch answered: {exc}", body=text[:BODY_KEPT], status=status) from None
        payload["_mode"] = (
            "json_schema"
            if self.response_format is not None and "response_format" not in self._dropped
            else "text"
        )
        tokens_in, tokens_out = self.usage(payload)
        return CallResult(
            text=payload["_text"],
            attempts=1,
            latency=0.0,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            sent=self.build_request([])[1],
            output_mode=payload["_mode"],
            request=self.request_params(),
            logprobs=_token_logprobs(payload),
        )

    def request_params(self) -> dict[str, Any]:
        """The parameters a request sent now carries, besides the model and the messages."""
        return request_params(self.build_request([])[0])

    def request_body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The body this client would send for ``messages`` now: what the response cache keys on."""
        return self.build_request(messages)[0]

    def usage(self, payload: dict) -> tuple[int | None, int | None]:
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        return int_or_none(usage.get("prompt_tokens")), int_or_none(usage.get("completion_tokens"))

    def headers(self) -> dict[str, str]:
        """The authentication headers of every request."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _post(self, body: dict) -> dict:
        headers = self.headers()
        deadline = time.monotonic() + self.timeout
        try:
            with self.http_client().stream("POST", self.url, json=body, headers=headers) as response:
                chunks = []
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise Retryable(f"no complete answer within the {self.timeout:g} s deadline")
                raw = b"".join(chunks)
        except httpx.TimeoutException:
            raise Retryable(f"no complete answer within the {self.timeout:g} s deadline") from None
        except httpx.RemoteProtocolError as exc:
            raise Retryable(f"truncated response ({exc})") from None
        except httpx.TransportError as exc:
            raise Retryable(f"connection failed ({type(exc).__name__}: {exc})") from None
        text = mask_secrets(raw.decode("utf-8", "replace"), self.api_key)
        return self.read_response(response, text)

    def read_response(self, response: httpx.Response, text: str) -> dict:
        status = response.status_code
        if status in (401, 403):
            raise JudgeRunFatal(
                f"the endpoint refused the API key (HTTP {status}) at {self.url}: {text[:300]}"
            )
        said = endpoint_said(text)
        if status in (400, 422):
            param = refused_param(text)
            if param is not None:
                raise _Refused(param, said)
        if status == 404 or (status in (400, 422) and _MODEL_UNKNOWN.search(said)):
            raise JudgeRunFatal(
                f"the endpoint does not know model \u201c{self.model}\u201d or the URL {self.url} "
                f"(HTTP {status}); it said: {said}"
            )
        if status in RETRY_STATUSES:
            raise Retryable(
                f"HTTP {status}",
                body=text[:BODY_KEPT],
                status=status,
                retry_after=retry_after_seconds(response.headers.get("Retry-After")),
            )
        if status >= 400:
            raise JudgeCallError(
                f"HTTP {status}; the endpoint said: {said}", body=text[:BODY_KEPT], status=status
            )
        try:
            payload = json.loads(text)
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Retryable(
                "the endpoint answered 200 with something that is not a chat completion",
                body=text[:BODY_KEPT],
                status=status,
            ) from None
        if not isinstance(payload, dict):
            raise Retryable(
                "the endpoint answered 200 with a JSON that is not an object", body=text[:BODY_KEPT]
            )
        said_no = payload["choices"][0]["message"].get("refusal")
        if not content and isinstance(said_no, str) and said_no:
            raise JudgeCallError(
                f"the model refused to answer: {said_no[:300]}", body=text[:BODY_KEPT], status=status
            )
        payload["_text"] = str(content or "")
        return payload


def request_params(body: dict[str, Any]) -> dict[str, Any]:
    """A request body's parameters (max_tokens, response_format, logprobs, ...): all but what is sent to be
    answered (the model, the messages and the system prompt), for the ledger."""
    return {k: v for k, v in body.items() if k not in ("model", "messages", "system")}


def _token_logprobs(payload: dict) -> list[tuple[str, list[tuple[str, float]]]] | None:
    """``choices[0].logprobs.content`` as (token, [(alternative, logprob)]); None when absent or unreadable."""
    try:
        content = payload["choices"][0]["logprobs"]["content"]
        return [
            (
                str(t["token"]),
                [(str(a["token"]), float(a["logprob"])) for a in t.get("top_logprobs") or []]
                or [(str(t["token"]), float(t["logprob"]))],
            )
            for t in content
        ]
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def int_or_none(value: Any) -> int | None:
    """``value`` when it is an int (a token count in a usage block), else None: a bool or a string is no count."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
