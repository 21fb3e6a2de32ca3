"""The response cache's key: a request identical to one already answered is served from the stored call.

Identical means the same provider, base URL, request body (model, sampling parameters, structured-output
and logprob options, rendered messages) and sample index; the API key is never part of it.
"""

from __future__ import annotations

import hashlib
import json

from annotator.judges.engine.calls import Task
from annotator.judges.engine.client import ChatClient


def request_key(client: ChatClient, task: Task) -> str:
    body = client.request_body(task.messages)
    blob = json.dumps([client.provider, client.display_url, body, task.sample], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
