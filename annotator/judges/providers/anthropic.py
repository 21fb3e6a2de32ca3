"""Anthropic's Messages API (``POST {base}/v1/messages``) over httpx, with the OpenAI client's retries and ledger.

The system prompt goes in ``system``, each turn's text in a content block; ``max_tokens`` is required by
the API, so a run that sets none asks for ``DEFAULT_MAX_TOKENS``. The API has no logprobs and no
``response_format``: a scoring template's answer is read from free text, as for any endpoint without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from annotator.judges.engine.client import (
    BODY_KEPT,
    RETRY_STATUSES,
    ChatClient,
    JudgeCallError,
    JudgeRunFatal,
    Retryable,
    endpoint_said,
    int_or_none,
    retry_after_seconds,
)

API_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 1024


def _error_type(text: str) -> str:
    """The ``error.type`` of an Anthropic error body (``authentication_error``, ``not_found_error``, ...)."""
    try:
        payload = json.loads(text)
    except ValueError:
        return ""
    error = payload.get("error") if isinstance(payload, dict) else None
    return str(error.get("type") or "") if isinstance(error, dict) else ""


@dataclass
class AnthropicClient(ChatClient):
    provider = "anthropic"
    identity_names_provider = True

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        if base.endswith("/v1/messages"):
            return base
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    @property
    def display_url(self) -> str:
        return super().display_url.removesuffix("/v1/messages").removesuffix("/v1")

    @property
    def params(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS}

    def build_request(self, messages: list[dict[str, str]]) -> tuple[dict[str, Any], dict[str, Any]]:
        sent = self.params
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [
            {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]}
            for m in messages
            if m["role"] != "system"
        ]
        body: dict[str, Any] = {"model": self.model, "messages": turns, **sent}
        if system:
            body["system"] = system
        return body, sent

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": API_VERSION}

    def usage(self, payload: dict) -> tuple[int | None, int | None]:
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        return int_or_none(usage.get("input_tokens")), int_or_none(usage.get("output_tokens"))

    def read_response(self, response: httpx.Response, text: str) -> dict:
        status, said, kind = response.status_code, endpoint_said(text), _error_type(text)
        if status in (401, 403) or kind in ("authentication_error", "permission_error"):
            raise JudgeRunFatal(
                f"Anthropic refused the API key (HTTP {status}, {kind or 'no type'}) at {self.url}: {said}"
            )
        if status == 404 or kind == "not_found_error":
            raise JudgeRunFatal(
                f"Anthropic does not know model \u201c{self.model}\u201d or the URL {self.url} "
                f"(HTTP {status}); it said: {said}"
            )
        if status in RETRY_STATUSES or kind in ("rate_limit_error", "overloaded_error", "api_error"):
            raise Retryable(
                f"HTTP {status} ({kind or 'no type'})",
                body=text[:BODY_KEPT],
                status=status,
                retry_after=retry_after_seconds(response.headers.get("Retry-After")),
            )
        if status >= 400:
            raise JudgeCallError(
                f"HTTP {status} ({kind or 'no type'}); Anthropic said: {said}",
                body=text[:BODY_KEPT],
                status=status,
            )
        try:
            payload = json.loads(text)
            blocks = payload["content"]
            answer = "".join(b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        except (ValueError, KeyError, TypeError):
            raise Retryable(
                "Anthropic answered 200 with something that is not a message",
                body=text[:BODY_KEPT],
                status=status,
            ) from None
        if payload.get("stop_reason") == "refusal":
            raise JudgeCallError(
                "the model refused to answer (stop_reason \u201crefusal\u201d)",
                body=text[:BODY_KEPT],
                status=status,
            )
        payload["_text"] = answer
        return payload
