"""One builder of the judge client, for the ``run_judge`` command and the web run alike."""

from __future__ import annotations

from typing import Any

from annotator.judges.engine.client import ChatClient

DEFAULTS: dict[str, Any] = {"timeout": 60.0, "max_retries": 4, "backoff": 1.0, "temperature": 0.0, "max_tokens": None}


def client_for(params: dict[str, Any], *, api_key: str = "") -> ChatClient:
    """A client for ``params`` (``base_url``, ``model`` and any of DEFAULTS' keys; others are ignored)."""
    chosen = {k: params[k] if params.get(k) is not None else v for k, v in DEFAULTS.items()}
    return ChatClient(base_url=params["base_url"], model=params["model"], api_key=api_key, **chosen)
