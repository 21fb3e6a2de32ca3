"""The providers' batch APIs, about half the price of one call at a time: OpenAI's Batch API (a JSONL file, then
a batch over it) and Anthropic's Message Batches. Each submits requests under custom ids, reports whether the
batch has ended, and fetches the answers as (HTTP status, body text) per custom id, which the client then
reads exactly as it reads one call's answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx

from annotator.judges.engine.client import (
    ChatClient,
    JudgeCallError,
    JudgeRunFatal,
    endpoint_said,
    mask_secrets,
)

ENDED, RUNNING = "ended", "running"


@dataclass(frozen=True)
class BatchAnswer:
    status: int  # the HTTP status the request would have had; 0 when the batch gave no answer (expired, cancelled)
    body: str


def _checked(client: ChatClient, response: httpx.Response, what: str) -> dict:
    text = mask_secrets(response.text, client.api_key)
    if response.status_code in (401, 403):
        raise JudgeRunFatal(
            f"the batch API refused the API key (HTTP {response.status_code}) while {what}: "
            f"{endpoint_said(text)}"
        )
    if response.status_code >= 400:
        raise JudgeCallError(
            f"the batch API answered HTTP {response.status_code} while {what}: {endpoint_said(text)}",
            status=response.status_code,
            body=text[:2000],
        )
    try:
        payload = response.json()
    except ValueError:
        raise JudgeCallError(f"the batch API answered something that is not JSON while {what}") from None
    if not isinstance(payload, dict):
        raise JudgeCallError(f"the batch API answered a JSON that is not an object while {what}")
    return payload


def _lines(text: str) -> list[dict]:
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


class OpenAIBatches:
    """``POST /files`` (purpose ``batch``), ``POST /batches``, ``GET /batches/{id}``, ``GET /files/{id}/content``."""

    max_requests = 50_000  # requests one batch may hold (OpenAI's limit): a run sends more as several batches

    def __init__(self, client: ChatClient):
        self.client, self.base = client, client.url.removesuffix("/chat/completions")

    def submit(self, requests: dict[str, dict]) -> str:
        http, headers = self.client.http_client(), self.client.headers()
        jsonl = "\n".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body})
            for cid, body in requests.items()
        ).encode()
        uploaded = _checked(
            self.client,
            http.post(
                f"{self.base}/files",
                headers=headers,
                data={"purpose": "batch"},
                files={"file": ("judge_batch.jsonl", jsonl, "application/jsonl")},
            ),
            "uploading the batch file",
        )
        batch = _checked(
            self.client,
            http.post(
                f"{self.base}/batches",
                headers=headers,
                json={
                    "input_file_id": uploaded.get("id"),
                    "endpoint": "/v1/chat/completions",
                    "completion_window": "24h",
                },
            ),
            "creating the batch",
        )
        return str(batch["id"])

    def state(self, batch_id: str) -> str:
        batch = _checked(
            self.client,
            self.client.http_client().get(f"{self.base}/batches/{batch_id}", headers=self.client.headers()),
            "polling the batch",
        )
        return ENDED if batch.get("status") in ("completed", "failed", "expired", "cancelled") else RUNNING

    def answers(self, batch_id: str) -> dict[str, BatchAnswer]:
        http, headers = self.client.http_client(), self.client.headers()
        batch = _checked(
            self.client, http.get(f"{self.base}/batches/{batch_id}", headers=headers), "reading the batch"
        )
        found: dict[str, BatchAnswer] = {}
        for key in ("output_file_id", "error_file_id"):
            if not batch.get(key):
                continue
            content = http.get(f"{self.base}/files/{batch[key]}/content", headers=headers)
            if content.status_code >= 400:
                _checked(self.client, content, "fetching the batch's results")
            for row in _lines(content.text):
                response = row.get("response") if isinstance(row.get("response"), dict) else {}
                if response.get("status_code"):
                    found[str(row.get("custom_id"))] = BatchAnswer(
                        int(response["status_code"]), json.dumps(response.get("body"))
                    )
        return found


class AnthropicBatches:
    """``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``, then its ``results_url`` (JSONL)."""

    max_requests = 100_000  # requests one message batch may hold (Anthropic's limit)

    def __init__(self, client: ChatClient):
        self.client, self.base = client, client.url.removesuffix("/v1/messages") + "/v1/messages/batches"

    def submit(self, requests: dict[str, dict]) -> str:
        batch = _checked(
            self.client,
            self.client.http_client().post(
                self.base,
                headers=self.client.headers(),
                json={"requests": [{"custom_id": cid, "params": body} for cid, body in requests.items()]},
            ),
            "creating the message batch",
        )
        return str(batch["id"])

    def _get(self, batch_id: str) -> dict:
        return _checked(
            self.client,
            self.client.http_client().get(f"{self.base}/{batch_id}", headers=self.client.headers()),
            "polling the message batch",
        )

    def state(self, batch_id: str) -> str:
        return ENDED if self._get(batch_id).get("processing_status") == "ended" else RUNNING

    def answers(self, batch_id: str) -> dict[str, BatchAnswer]:
        url = self._get(batch_id).get("results_url") or f"{self.base}/{batch_id}/results"
        content = self.client.http_client().get(url, headers=self.client.headers())
        if content.status_code >= 400:
            _checked(self.client, content, "fetching the message batch's results")
        found: dict[str, BatchAnswer] = {}
        for row in _lines(content.text):
            result = row.get("result") if isinstance(row.get("result"), dict) else {}
            if result.get("type") == "succeeded":
                found[str(row.get("custom_id"))] = BatchAnswer(200, json.dumps(result.get("message")))
            elif result.get("type") == "errored":
                error = result.get("error") if isinstance(result.get("error"), dict) else {}
                error = (
                    error["error"] if isinstance(error.get("error"), dict) else error
                )  # the API nests it once
                status = 400 if error.get("type") == "invalid_request_error" else 500
                found[str(row.get("custom_id"))] = BatchAnswer(
                    status, json.dumps({"type": "error", "error": error})
                )
        return found
