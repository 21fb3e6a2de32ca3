"""Local fakes of OpenAI's Batch API (``/v1/files``, ``/v1/batches``) and Anthropic's Message Batches
(``/v1/messages/batches``) in one server on 127.0.0.1. A batch ends after ``polls`` status requests; each
request in it is answered by ``reply(prompt)`` unless ``expire(custom_id)`` says the batch let it expire.
``answered`` counts the requests the batches answered (the paid ones), ``created`` the batches submitted.
"""

from __future__ import annotations

import email.parser
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.local_server import LocalServer


def _multipart_file(content_type: str, body: bytes) -> bytes:
    message = email.parser.BytesParser().parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    for part in message.walk():
        if part.get_filename():
            return part.get_payload(decode=True)
    raise ValueError("no file in the upload")


class FakeBatchAPIs(LocalServer):
    def __init__(
        self,
        reply: Callable[[str], str] = lambda p: '{"score": 0.75, "reason": "Mostly answers."}',
        *,
        polls: int = 2,
        expire: Callable[[str], bool] | None = None,
        key: str = "",
    ):
        self.reply, self.polls, self.expire, self.key = reply, polls, expire, key
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.answered = 0
        self.created = 0
        self.lock = threading.Lock()
        self._serve(self._handler())

    @property
    def url(self) -> str:
        return self.origin

    def _run(self, batch: dict) -> None:
        """Answer every request of ``batch`` once, when it ends."""
        results = []
        for cid, prompt, model in batch["requests"]:
            if self.expire and self.expire(cid):
                results.append((cid, None, model))
                continue
            self.answered += 1
            results.append((cid, self.reply(prompt), model))
        batch["results"] = results

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, payload, raw: bool = False) -> None:
                body = payload if raw else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _authorised(self) -> bool:
                given = self.headers.get("x-api-key") or (
                    self.headers.get("Authorization") or ""
                ).removeprefix("Bearer ")
                if fake.key and given != fake.key:
                    self._send(401, {"error": {"type": "authentication_error", "message": "bad key"}})
                    return False
                return True

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if not self._authorised():
                    return None
                with fake.lock:
                    if self.path == "/v1/files":
                        fid = f"file-{len(fake.files)}"
                        fake.files[fid] = _multipart_file(self.headers["Content-Type"], body)
                        return self._send(200, {"id": fid, "object": "file", "purpose": "batch"})
                    fake.created += 1
                    bid = f"batch_{fake.created}"
                    if self.path == "/v1/batches":
                        spec = json.loads(body)
                        lines = [
                            json.loads(x)
                            for x in fake.files[spec["input_file_id"]].decode().splitlines()
                            if x
                        ]
                        requests = [
                            (x["custom_id"], x["body"]["messages"][-1]["content"], x["body"]["model"])
                            for x in lines
                        ]
                        fake.batches[bid] = {"kind": "openai", "requests": requests, "polled": 0}
                        return self._send(200, {"id": bid, "status": "validating"})
                    if self.path == "/v1/messages/batches":
                        spec = json.loads(body)
                        requests = [
                            (
                                r["custom_id"],
                                r["params"]["messages"][-1]["content"][0]["text"],
                                r["params"]["model"],
                            )
                            for r in spec["requests"]
                        ]
                        fake.batches[bid] = {"kind": "anthropic", "requests": requests, "polled": 0}
                        return self._send(
                            200, {"id": bid, "type": "message_batch", "processing_status": "in_progress"}
                        )
                return self._send(404, {"error": {"type": "not_found_error", "message": self.path}})

            def do_GET(self):
                if not self._authorised():
                    return None
                parts = self.path.strip("/").split("/")
                with fake.lock:
                    if parts[:2] == ["v1", "batches"] and parts[2] in fake.batches:
                        batch = fake.batches[parts[2]]
                        batch["polled"] += 1
                        if batch["polled"] < fake.polls:
                            return self._send(200, {"id": parts[2], "status": "in_progress"})
                        if "results" not in batch:
                            fake._run(batch)
                        return self._send(
                            200, {"id": parts[2], "status": "completed", "output_file_id": f"out-{parts[2]}"}
                        )
                    if parts[:2] == ["v1", "files"] and parts[2].startswith("out-"):
                        batch = fake.batches[parts[2].removeprefix("out-")]
                        lines = [
                            json.dumps(
                                {
                                    "custom_id": cid,
                                    "response": {
                                        "status_code": 200,
                                        "body": {
                                            "choices": [{"message": {"role": "assistant", "content": text}}],
                                            "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                                        },
                                    },
                                }
                            )
                            for cid, text, _ in batch["results"]
                            if text is not None
                        ]
                        return self._send(200, "\n".join(lines).encode(), raw=True)
                    if parts[:3] == ["v1", "messages", "batches"] and parts[3] in fake.batches:
                        batch = fake.batches[parts[3]]
                        if len(parts) == 5:
                            lines = [
                                json.dumps(
                                    {"custom_id": cid, "result": {"type": "expired"}}
                                    if text is None
                                    else {
                                        "custom_id": cid,
                                        "result": {
                                            "type": "succeeded",
                                            "message": {
                                                "type": "message",
                                                "role": "assistant",
                                                "model": model,
                                                "content": [{"type": "text", "text": text}],
                                                "stop_reason": "end_turn",
                                                "usage": {"input_tokens": 100, "output_tokens": 10},
                                            },
                                        },
                                    }
                                )
                                for cid, text, model in batch["results"]
                            ]
                            return self._send(200, "\n".join(lines).encode(), raw=True)
                        batch["polled"] += 1
                        if batch["polled"] < fake.polls:
                            return self._send(200, {"id": parts[3], "processing_status": "in_progress"})
                        if "results" not in batch:
                            fake._run(batch)
                        return self._send(
                            200,
                            {
                                "id": parts[3],
                                "processing_status": "ended",
                                "results_url": f"{fake.url}/v1/messages/batches/{parts[3]}/results",
                            },
                        )
                return self._send(404, {"error": {"type": "not_found_error", "message": self.path}})

        return Handler
