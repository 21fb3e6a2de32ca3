"""Labels made elsewhere for a stream's sampled traces: saved as annotations of their items by the
offline-annotations import (``annotator.uploads.services.annotation_imports``), with its checks: the
rubric's scale, one annotation per trace and annotator, none while that person holds the item in the
browser. All or nothing, with each problem named by its row (the label's 1-based position)."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from annotator.models import Stream, Trace
from annotator.streams.services.refresh import series_refresh_queue
from annotator.uploads.files.errors import ImportRefused, RowError
from annotator.uploads.services.annotation_imports import annotations_import_file

KEYS = {"trace_id", "annotator", "scores", "constraints"}


def stream_annotations_import(*, stream: Stream, labels: list[Any], created_by) -> int:
    """Save the labels; returns how many. Raises ``ImportRefused``."""
    errors: list[RowError] = []
    lines = []
    ids = [x.get("trace_id") for x in labels if isinstance(x, dict) and isinstance(x.get("trace_id"), str)]
    sampled = dict(Trace.objects.filter(stream=stream, trace_id__in=ids).values_list("trace_id", "sampled"))
    for row, label in enumerate(labels, start=1):
        if not isinstance(label, dict):
            errors.append(RowError(row, None, "a label must be a JSON object", unit="line"))
            continue
        for key in sorted(set(label) - KEYS):
            errors.append(RowError(row, key, "is not a key of a label", unit="line"))
        trace_id, scores = label.get("trace_id"), label.get("scores")
        if not isinstance(trace_id, str) or trace_id not in sampled:
            errors.append(
                RowError(row, "trace_id", f"{trace_id!r} is not a trace of this stream", unit="line")
            )
        elif not sampled[trace_id]:
            # Labels on traces the rule did not sample would make the labelled set no longer a known sample.
            errors.append(
                RowError(row, "trace_id", f"`{trace_id}` was not sampled for human review", unit="line")
            )
        if not isinstance(scores, dict) or not scores:
            errors.append(RowError(row, "scores", "must be an object of dimension: score", unit="line"))
            continue
        line = {"item_id": trace_id, "annotator": label.get("annotator"), **scores}
        constraints = label.get("constraints")
        if constraints is not None:
            if not isinstance(constraints, list):
                errors.append(
                    RowError(row, "constraints", "must be a list of met / not met answers", unit="line")
                )
            else:
                words = {True: "met", False: "not_met"}
                line["constraints_met"] = ";".join(words.get(c, str(c)) for c in constraints)
        lines.append(line)
    if errors:
        raise ImportRefused(errors)
    if not lines:
        raise ImportRefused(["No labels were given."])
    data = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines).encode("utf-8")
    annotations_import_file(
        data=data, filename="stream-labels.jsonl", batch_name=stream.batch.name, created_by=created_by
    )
    transaction.on_commit(lambda: series_refresh_queue(stream_id=stream.pk), robust=True)
    return len(lines)
