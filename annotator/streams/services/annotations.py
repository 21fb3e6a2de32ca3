"""Labels made elsewhere for a stream's sampled traces, saved as annotations of their items by the
offline-annotations import (``annotator.uploads.services.annotation_imports``), with its checks: the
rubric's scale, one annotation per trace and annotator, none while that person holds the item in the
browser.

Like the traces endpoint, every label is checked and each bad one is named by its 0-based index in the
request, its trace_id and its problems, in the API's own keys (``trace_id``, ``annotator``,
``scores.<dimension>``, ``constraints``); the good labels of the same request are saved. A label for a
trace and annotator already stored (in an earlier request, or earlier in this one) is a duplicate: counted,
and it changes nothing, so a request can be sent again after its bad labels are fixed."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from annotator.models import Annotation, Stream, Trace
from annotator.streams.services.refresh import series_refresh_queue
from annotator.uploads.files.annotation_file import USERNAME, USERNAME_MAX_LENGTH
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.selectors.plans import annotation_import_plan
from annotator.uploads.services.annotation_imports import annotations_import

KEYS = ("trace_id", "annotator", "scores", "constraints")
# Per API request: a thousand traces' worth at k = 5, like the traces endpoint's bound on one request's work.
MAX_LABELS = 5000
ANSWERS = {True: "met", False: "not_met", "met": "met", "not_met": "not_met"}
# The import's names for what this API calls otherwise: its problems are reported in the API's terms.
IMPORT_KEYS = {"item_id": "trace_id", "constraints_met": "constraints"}
CHANGED = (
    "The stream's batch changed while the labels were being saved (someone rated, or was just given, one of "
    "these traces in the browser), so none was saved; send the request again (labels stored by then count "
    "as duplicates)"
)
PLAN_ROUNDS = 3  # each round drops the labels the import refused; the next finds none in practice


@dataclass
class LabelsResult:
    imported: int = 0
    duplicates: int = 0
    errors: list[dict] = field(default_factory=list)


@dataclass
class _Label:
    index: int
    trace_id: str
    annotator: str
    scores: dict[str, int]
    constraints: list[str]

    def line(self) -> dict:
        line: dict[str, Any] = {"item_id": self.trace_id, "annotator": self.annotator, **self.scores}
        if self.constraints:
            line["constraints_met"] = ";".join(self.constraints)
        return line


def _scores(raw: Any, rubric, problems: list[str]) -> dict[str, int]:
    if not isinstance(raw, dict) or not raw:
        problems.append("`scores` must be an object of dimension: score, with at least one score")
        return {}
    lo, hi = rubric.scale_min, rubric.scale_max
    out = {}
    for key, value in raw.items():
        where = f"`scores.{key}`"
        if key not in rubric.dimension_keys:
            problems.append(
                f"{where}: {key!r} is not a dimension of the rubric ({list(rubric.dimension_keys)})"
            )
        elif value is None:
            continue  # not rated
        elif isinstance(value, bool) or not isinstance(value, int | float):
            problems.append(f"{where}: {value!r} is not a number")
        elif isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            problems.append(
                f"{where}: {value!r} is not a whole number; a label is a whole score on the rubric's "
                f"{lo}–{hi} scale (judge scores may be fractional, labels may not)"
            )
        elif not lo <= value <= hi:
            problems.append(f"{where}: {int(value)} is outside the rubric's scale {lo}–{hi}")
        else:
            out[key] = int(value)
    if not out and not any(p.startswith("`scores") for p in problems):
        problems.append("`scores` has no score: rate at least one dimension")
    return out


def _label(index: int, raw: Any, rubric, sampled: dict[str, bool]) -> tuple[_Label | None, list[str]]:
    """One label: the checked values, or every problem with it."""
    if not isinstance(raw, dict):
        return None, ["a label must be a JSON object with trace_id, annotator and scores"]
    problems = [f"unknown key `{key}` (keys: {', '.join(KEYS)})" for key in raw if key not in KEYS]
    trace_id, annotator = raw.get("trace_id"), raw.get("annotator")
    if not isinstance(trace_id, str) or not trace_id:
        problems.append("`trace_id` must be a non-empty string")
    elif trace_id not in sampled:
        problems.append(f"`trace_id` {trace_id!r} is not a trace of this stream")
    elif not sampled[trace_id]:
        # Labels on traces the rule did not sample would make the labelled set no longer a known sample.
        problems.append(f"`trace_id` {trace_id!r} was not sampled for human review, so it takes no labels")
    if not isinstance(annotator, str) or not annotator:
        problems.append("`annotator` must be a non-empty string (a user name)")
    elif len(annotator) > USERNAME_MAX_LENGTH or not USERNAME.match(annotator):
        problems.append(
            f"`annotator` {annotator!r} is not a valid user name (letters, digits and @ . + - _ only, at "
            f"most {USERNAME_MAX_LENGTH} characters)"
        )
    scores = _scores(raw.get("scores"), rubric, problems)
    constraints = raw.get("constraints")
    if constraints is None:
        constraints = []
    elif not isinstance(constraints, list) or not all(
        isinstance(c, bool | str) and c in ANSWERS for c in constraints
    ):
        problems.append("`constraints` must be a list of answers, each met / not_met (or true / false)")
    if problems:
        return None, problems
    return _Label(index, trace_id, annotator, scores, [ANSWERS[c] for c in constraints]), []


def _stored_pairs(stream: Stream, labels: list[_Label]) -> set[tuple[str, str]]:
    """The (trace_id, annotator) pairs among ``labels`` that already have an annotation."""
    return set(
        Annotation.objects.filter(
            item__batch_id=stream.batch_id,
            item__item_id__in={x.trace_id for x in labels},
            annotator__username__in={x.annotator for x in labels},
        ).values_list("item__item_id", "annotator__username")
    )


def _new(stream: Stream, checked: list[_Label], result: LabelsResult) -> list[_Label]:
    """The labels whose trace and annotator have no annotation yet; the others are counted as duplicates
    (stored already, or given earlier in the request)."""
    stored = _stored_pairs(stream, checked) if checked else set()
    new = []
    for label in checked:
        pair = (label.trace_id, label.annotator)
        if pair in stored:
            result.duplicates += 1
        else:
            stored.add(pair)
            new.append(label)
    return new


def _refused(plan_errors, good: list[_Label]) -> tuple[dict[int, list[str]], list[str]]:
    """The import's problems per label (its line n is ``good[n - 1]``), in the API's terms, and the
    problems of the request as a whole."""
    per_label: dict[int, list[str]] = {}
    whole = []
    for e in plan_errors:
        message = e.message.replace("item `", "trace `")
        if e.row is None or not 1 <= e.row <= len(good):
            whole.append(message)
            continue
        key = IMPORT_KEYS.get(e.column, e.column)
        if key in good[e.row - 1].scores:
            key = f"scores.{key}"
        per_label.setdefault(good[e.row - 1].index, []).append(f"`{key}`: {message}" if key else message)
    return per_label, whole


def stream_annotations_import(*, stream: Stream, labels: list[Any], created_by) -> LabelsResult:
    """Check every label, save the good new ones, count the duplicates, name the bad ones. Raises
    ``ImportRefused`` (nothing saved) for an empty list or a problem of the request as a whole."""
    if not labels:
        raise ImportRefused(["No labels were given."])
    rubric = stream.batch.rubric_obj
    ids = {x.get("trace_id") for x in labels if isinstance(x, dict) and isinstance(x.get("trace_id"), str)}
    ids = [i for i in ids if "\x00" not in i]  # a NUL cannot be queried (and is no stored trace_id)
    sampled = dict(Trace.objects.filter(stream=stream, trace_id__in=ids).values_list("trace_id", "sampled"))
    result, checked, bad = LabelsResult(), [], {}
    for index, raw in enumerate(labels):
        label, problems = _label(index, raw, rubric, sampled)
        if label is None:
            bad[index] = problems
        else:
            checked.append(label)
    with transaction.atomic():
        good = _new(stream, checked, result)
        rounds = 0
        while good:
            data = "\n".join(json.dumps(x.line(), ensure_ascii=False) for x in good).encode("utf-8")
            plan = annotation_import_plan(
                data=data, filename="stream-labels.jsonl", batch_name=stream.batch.name
            )
            if not plan.errors:
                try:
                    result.imported = annotations_import(plan=plan, created_by=created_by)
                except ImportRefused:  # its words are the upload page's ("the file"): say it in this API's
                    raise ImportRefused([CHANGED]) from None
                break
            per_label, whole = _refused(plan.errors, good)
            if whole:
                raise ImportRefused(whole)
            bad.update({i: bad.get(i, []) + p for i, p in per_label.items()})
            good = [x for x in good if x.index not in per_label]
            rounds += 1
            if rounds == PLAN_ROUNDS and good:
                raise ImportRefused([CHANGED])
    for index in sorted(bad):
        raw = labels[index]
        trace_id = raw.get("trace_id") if isinstance(raw, dict) else None
        result.errors.append(
            {
                "index": index,
                "trace_id": trace_id if isinstance(trace_id, str) else None,
                "problems": bad[index],
            }
        )
    if result.imported:
        transaction.on_commit(lambda: series_refresh_queue(stream_id=stream.pk), robust=True)
    return result
