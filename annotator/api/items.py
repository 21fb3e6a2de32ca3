"""Items sent in a request body, as the bytes of a JSONL file, so that the file importers read
them: the same columns, checks and row-numbered errors as an uploaded file (row n = the n-th item
of ``items``, or line n of ``jsonl``)."""

from __future__ import annotations

import json
from typing import Any

from ninja import Schema
from pydantic import model_validator

from annotator.api.problems import INVALID_REQUEST, Problem

FILENAME = "items.jsonl"


class ItemsIn(Schema):
    """Exactly one of ``items`` (a list of JSON objects) or ``jsonl`` (JSONL text, one object per line)."""

    items: list[Any] | None = None
    jsonl: str | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if (self.items is None) == (self.jsonl is None):
            raise ValueError(
                "send the items either as `items` (a list of objects) or as `jsonl` (text), not both or neither"
            )
        return self

    def jsonl_bytes(self) -> bytes:
        if self.jsonl is not None:
            return self.jsonl.encode("utf-8", "surrogatepass")  # a lone surrogate: refused as not UTF-8
        if not self.items:
            raise Problem(422, "`items` is empty: send at least one item.", kind=INVALID_REQUEST)
        return "\n".join(json.dumps(item) for item in self.items).encode("utf-8")
