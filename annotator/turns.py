"""Conversation turns, one rule for every reader: uploads of traces, the rating page and judge prompts.

A stored or mapped conversation is a list of messages in whatever shape its source used
(``{"role", "content"}``, ``{"speaker", "text"}``, ``{"from", "value"}``, LangChain's ``{"type", ...}``,
or bare strings). :func:`normalise_turns` turns it into ``{"role", "content"}`` text pairs.
"""

from __future__ import annotations

import json
from typing import Any

ROLE_KEYS = ("role", "speaker", "from", "type")
CONTENT_KEYS = ("content", "text", "value")
NO_ROLE = "turn"  # the role shown for a message that names none
USER_ROLES = frozenset({"user", "human", "customer"})


def as_text(value: Any) -> str:
    """A message's content as text: strings as they are, nothing as "", anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def normalise_turns(value: Any) -> list[dict[str, str]]:
    """Any list of messages → ``[{"role": str, "content": str}, ...]``; anything but a list → ``[]``.

    >>> normalise_turns([{"speaker": "human", "text": "hi"}, "ok", {"role": "assistant", "content": {"a": 1}}])
    [{'role': 'human', 'content': 'hi'}, {'role': 'turn', 'content': 'ok'}, {'role': 'assistant', 'content': '{"a": 1}'}]
    """
    turns = []
    for message in value if isinstance(value, list) else []:
        if isinstance(message, dict):
            role = next((str(message[k]) for k in ROLE_KEYS if message.get(k)), NO_ROLE)
            content = next((message[k] for k in CONTENT_KEYS if k in message), "")
        else:
            role, content = NO_ROLE, message
        turns.append({"role": role, "content": as_text(content)})
    return turns


def is_user(turn: dict[str, str]) -> bool:
    return turn["role"].lower() in USER_ROLES
