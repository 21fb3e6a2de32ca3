"""A batch's report revision, and the stored report for a revision and options.

The revision is read from what the writes that change a report already leave behind (counts, the
largest ids and the latest timestamps of the batch's rows), so the rating path writes nothing more.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from typing import Any

from django.db.models import Count, Max, Q

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
from annotator.selectors.report_sections import REPORT_SECTIONS

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


def options_key(kind: str, **options: Any) -> str:
    """The stored key of a report kind with its options and the registered sections, e.g.
    ``report;epsilon=0.1;n_resamples=1000;...;sections=judges:...``."""
    key = ";".join(
        [
            kind,
            *(f"{name}={options[name]!r}" for name in sorted(options)),
            f"sections={_sections_signature()}",
        ]
    )
    # A key from a query string may be long or hold characters PostgreSQL's text refuses (NUL): digest it.
    if len(key) > 200 or not key.isascii() or not key.isprintable():
        key = f"{kind};sha256={hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"
    return key


def report_through_cache(
    *, batch: Batch, key: str, compute, also: tuple[str, ...] = (), pick=lambda found: found
):
    """The stored result for ``key`` at the batch's revision, else ``compute()``, stored for the next
    request. ``also`` names stored results that contain this one (``pick`` takes it out of them)."""
    import time

    from annotator.services.report_cache import report_cache_store

    revision = report_revision(batch=batch)
    stored = ReportCache.objects.filter(batch=batch, revision=revision, options__in=[key, *also])
    rows = dict(stored.values_list("options", "payload"))
    if key in rows:
        return pickle.loads(rows[key])  # only report_cache_store writes these rows
    for other in also:
        if other in rows:
            return pick(pickle.loads(rows[other]))
    started = time.perf_counter()
    result = compute()
    seconds = time.perf_counter() - started
    report_cache_store(
        batch=batch,
        revision=revision,
        current=report_revision(batch=batch),
        options=key,
        report=result,
        seconds=seconds,
    )
    return result
