"""A batch's report revision, and the stored report for a revision, options and schema version.

The revision is read from what the writes that change a report already leave behind (counts, the
largest ids and the latest timestamps of the batch's rows), so the rating path writes nothing more.
The schema version is read from the classes a stored report is made of, so a release that changes
them serves no report pickled by an earlier one.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
import typing
from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Max, Q
from django.utils.module_loading import import_string

from annotator.models import (
    Adjudication,
    Annotation,
    AnnotatorStanding,
    Assignment,
    Batch,
    GoldAnswer,
    GoldItem,
    QualityRule,
    ReportCache,
)
from annotator.reports.selectors.sections import REPORT_SECTIONS, entry_function

_CHANGED = {"n": Count("pk"), "last": Max("pk")}


def report_revision(*, batch: Batch) -> str:
    """A digest that changes with every write a report reads: annotations (submit, edit, import,
    delete), skips, exclusions, warnings, blocks and training, gold answers and gold items,
    adjudications, the quality rule, the batch's own name, k and rubric, and what each registered report
    section reads (``ReportSection.revision``: the judges' scores, failures, verdicts, calls and
    calibration set)."""
    in_batch = Q(item__batch=batch)
    facts: list[Any] = [
        batch.name,
        batch.k,
        batch.rubric,
        Annotation.objects.filter(in_batch).aggregate(**_CHANGED, changed=Max("updated_at")),
        Assignment.objects.filter(in_batch, state=Assignment.State.SKIPPED).aggregate(**_CHANGED),
        AnnotatorStanding.objects.filter(batch=batch).aggregate(
            **_CHANGED,
            warned=Max("warned_at"),
            blocked=Max("blocked_at"),
            screened=Max("screened_out_at"),
            excluded=Count("pk", filter=Q(excluded=True)),
            excluded_at=Max("excluded_at"),
            passed=Count("pk", filter=Q(training="passed")),
            failed=Count("pk", filter=Q(training="failed")),
        ),
        GoldItem.objects.filter(batch=batch).aggregate(**_CHANGED),
        GoldAnswer.objects.filter(gold_item__batch=batch, submitted_at__isnull=False).aggregate(
            **_CHANGED,
            submitted=Max("submitted_at"),
            passed=Count("pk", filter=Q(passed=True)),
            skipped=Count("pk", filter=Q(skipped=True)),
        ),
        Adjudication.objects.filter(in_batch).aggregate(**_CHANGED, changed=Max("updated_at")),
        list(QualityRule.objects.filter(batch=batch).values()),
        # What the registered sections read (the judges' rows): each section names its own.
        {name: section.revision_facts(batch) for name, section in REPORT_SECTIONS.items()},
    ]
    text = json.dumps(facts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _sections_signature() -> str:
    """The report sections registered now: a stored report built with other sections is not served."""
    return ",".join(
        f"{s.name}:{s.builder if isinstance(s.builder, str) else s.builder.__qualname__}"
        for s in REPORT_SECTIONS.values()
    )


def schema_classes(roots: Iterable[Any]) -> dict[str, list[list[str]]]:
    """Every dataclass (and named tuple) reachable from ``roots`` (classes, or functions by their return
    type) through the types of their fields, by dotted name, with its fields' names and declared types."""
    found: dict[str, list[list[str]]] = {}
    todo = [_return_type(root) if callable(root) and not isinstance(root, type) else root for root in roots]
    while todo:
        kind = todo.pop()
        if isinstance(kind, type) and (dataclasses.is_dataclass(kind) or hasattr(kind, "_fields")):
            name = f"{kind.__module__}.{kind.__qualname__}"
            if name in found:
                continue
            declared = _declared_fields(kind)
            found[name] = [[field, str(text)] for field, text in declared.items()]
            todo.extend(_resolved(kind, text) for text in declared.values())
        else:
            todo.extend(typing.get_args(kind))  # tuple[X, ...], X | None, dict[str, X]
    return found


def _declared_fields(kind: type) -> dict[str, Any]:
    if dataclasses.is_dataclass(kind):
        return {f.name: f.type for f in dataclasses.fields(kind)}
    return {name: kind.__annotations__.get(name, "") for name in kind._fields}


def _resolved(owner: Any, annotation: Any) -> Any:
    """A field's annotation (a string, the modules being ``from __future__ import annotations``) as the
    type it names in its module; None when it names nothing there (its text still counts)."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, vars(sys.modules[owner.__module__]))  # noqa: S307 (our own source's annotations)
    except Exception:
        return None


def _return_type(function: Any) -> Any:
    return _resolved(function, function.__annotations__.get("return"))


# What stored rows hold, besides each registered section's result: the report (its quality section
# typed Any there) and the report page's quality context. By dotted path, as the registries name
# their functions: the report modules import this one.
STORED_ROOTS = (
    "annotator.reports.selectors.batch_report.BatchReport",
    "annotator.quality.selectors.report_section.QualitySection",
    "annotator.quality.report_block.quality_context",
)


def _schema_roots() -> list[Any]:
    builders = [entry_function(section.builder) for section in REPORT_SECTIONS.values()]
    return [*(import_string(path) for path in STORED_ROOTS), *builders]


@functools.cache
def report_schema_version() -> str:
    """A digest of the fields of every class a stored report is made of and of the table of agreement
    statistics: adding, removing, renaming or retyping a field, or changing a statistic, changes it, with
    nobody to remember a number to bump."""
    from annotator.reports.statistics import statistics_digest

    shape = {"classes": schema_classes(_schema_roots()), "statistics": statistics_digest()}
    text = json.dumps(shape, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def options_key(kind: str, **options: Any) -> str:
    """The stored key of a report kind with its options, the registered sections and the schema version,
    e.g. ``report;epsilon=0.1;n_resamples=1000;...;sections=judges:...;schema=3f2a...``."""
    key = ";".join(
        [
            kind,
            *(f"{name}={options[name]!r}" for name in sorted(options)),
            f"sections={_sections_signature()}",
            f"schema={report_schema_version()}",
        ]
    )
    # A key from a query string may be long or hold characters PostgreSQL's text refuses (NUL): digest it.
    if len(key) > 200 or not key.isascii() or not key.isprintable():
        key = f"{kind};sha256={hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"
    return key


def stored_payloads(*, batch: Batch, revision: str, keys: Iterable[str]) -> dict[str, bytes]:
    """The pickled reports stored for ``keys`` at the batch's ``revision``, by key (only
    ``annotator.reports.services.storing`` writes them, and unpickles them)."""
    stored = ReportCache.objects.filter(batch=batch, revision=revision, options__in=list(keys))
    return dict(stored.values_list("options", "payload"))
