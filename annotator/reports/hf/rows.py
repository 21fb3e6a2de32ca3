"""The rows of the dataset's configs, read from the database (selectors: nothing here writes).

``rating_chunks`` streams every annotation of a batch in the report's order (item, submission time,
id), in column chunks ready for pyarrow. The configs a feature adds read their rows themselves
(``annotator.reports.hf.parts``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.db.models import OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils.crypto import salted_hmac

from annotator.db_private import compiled_sql
from annotator.db_rows import chunked_cursor, converter
from annotator.models import (
    Adjudication,
    Annotation,
    AnnotatorStanding,
    Batch,
    GoldItem,
    Item,
    Score,
)
from annotator.reports.selectors.score_packing import Packing

FETCH = 50_000  # annotations per chunk: one pyarrow record batch
# A salt, not an import path: it stays as the module was named when datasets were first published, so a
# rater keeps the same pseudonym in every dataset of the same batch, before and after the module moved.
RATER_SALT = "annotator.exports.hf.rater"
TIMESTAMP = pa.timestamp("us", tz="UTC")
SOURCE_NAMES = {Annotation.Source.WEB: "browser", Annotation.Source.IMPORT: "import"}


def rater_pseudonym(*, batch_id: int, user_pk: int) -> str:
    """A rater's id in the published dataset: the same for every export of the batch, different
    across batches, and not computable without the server's SECRET_KEY.

    An HMAC keyed on SECRET_KEY (Django's ``salted_hmac``) rather than a hash of the username: a
    username or a Prolific id is short or known to others, so a plain hash of it could be
    reversed by trying candidates. It needs no stored secret per batch (no migration); rotating
    SECRET_KEY changes every pseudonym."""
    digest = salted_hmac(RATER_SALT, f"{batch_id}:{user_pk}", algorithm="sha256").hexdigest()
    return f"rater-{digest[:16]}"


@dataclass(frozen=True)
class ItemIndex:
    """The batch's items in report order (position, id): their pks and the ids the rows carry."""

    pk: np.ndarray
    item_id: list[str]
    system_id: list[str]
    prompt_id: list[str]

    def rows_of(self, pks: np.ndarray) -> np.ndarray:
        sorter = np.argsort(self.pk)
        return sorter[np.searchsorted(self.pk, pks, sorter=sorter)]


def item_index(*, batch: Batch) -> ItemIndex:
    rows = list(
        Item.objects.filter(batch=batch)
        .order_by("position", "id")
        .values_list("id", "item_id", "system_id", "prompt_id")
    )
    return ItemIndex(
        pk=np.array([r[0] for r in rows], dtype=np.int64),
        item_id=[r[1] for r in rows],
        system_id=[r[2] for r in rows],
        prompt_id=[r[3] for r in rows],
    )


@dataclass(frozen=True)
class RatingChunk:
    """Up to ``FETCH`` annotations, column by column."""

    item_row: np.ndarray  # row of the item in ItemIndex
    annotator_pk: np.ndarray
    digits: np.ndarray  # annotations × dimensions: score - scale_min + 1, 0 = not rated
    flags: list[tuple[str, ...]]
    constraints_met: list[tuple[bool, ...]]
    seconds: pa.Array  # float seconds, null when the start was not recorded
    source: list[str]
    created_at: pa.Array  # UTC timestamps


_RATING_COLUMNS = (
    "item_id",
    "annotator_id",
    "started_at",
    "submitted_at",
    "source",
    "flags",
    "constraints_met",
)


def _ratings_query(batch: Batch, packing: Packing):
    """One row per annotation, grouped by item in batch order, then by submission (the report's order).
    Each packed score column is a subquery on the one-score-per-dimension index: no GROUP BY over
    the annotation's wide columns, which made SQLite sort every score row before the first came back."""
    in_scale = Q(value__gte=packing.scale_min, value__lte=packing.scale_max)
    packed = {
        f"packed{n}": Coalesce(
            Subquery(
                Score.objects.filter(in_scale, annotation=OuterRef("pk"))
                .values("annotation_id")
                .annotate(packed=Sum(packing.digits(group, dimension="dimension", value="value")))
                .values("packed")
            ),
            Value(0),
        )
        for n, group in enumerate(packing.groups)
    }
    return (
        Annotation.objects.filter(item__batch=batch)
        .annotate(**packed)
        .order_by("item__position", "item_id", "submitted_at", "id")
        .values_list(*_RATING_COLUMNS, *packed)
    )


def _timestamps(raw: list[Any]) -> pa.Array:
    """Timestamps as the cursor gives them → UTC timestamps. SQLite's are text, parsed by pyarrow
    at once, not by the ORM's converter per row; PostgreSQL's are datetimes."""
    first = next((v for v in raw if v is not None), None)
    if isinstance(first, str):
        return pa.array(raw, type=pa.string()).cast(pa.timestamp("us")).cast(TIMESTAMP)
    return pa.array(raw, type=TIMESTAMP)


def rating_chunks(*, batch: Batch, items: ItemIndex) -> Iterator[RatingChunk]:
    """Every annotation of ``batch`` in column chunks, in one ordered query streamed from a chunked cursor."""
    rubric = batch.rubric_obj
    packing = Packing(rubric.dimension_keys, rubric.scale_min, rubric.scale_max)
    flag_keys = converter(Annotation, "flags")
    flags = lru_cache(maxsize=1_024)(lambda raw: tuple(flag_keys(raw) or ()))
    answers = converter(Annotation, "constraints_met")
    met = lru_cache(maxsize=1_024)(lambda raw: tuple(bool(m) for m in answers(raw) or ()))
    powers = [packing.base ** np.arange(len(g)) for g in packing.groups]
    sql, params = compiled_sql(_ratings_query(batch, packing))
    with chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            width = len(packing.groups)
            packed = np.fromiter(
                chain.from_iterable(r[7:] for r in rows), dtype=np.int64, count=len(rows) * width
            ).reshape(len(rows), width)
            digits = (
                np.concatenate(
                    [(packed[:, n, None] // p[None, :]) % packing.base for n, p in enumerate(powers)],
                    axis=1,
                )
                if packing.groups
                else np.zeros((len(rows), 0), dtype=np.int64)
            )
            submitted = _timestamps([r[3] for r in rows])
            started = _timestamps([r[2] for r in rows])
            seconds = pc.divide(pc.cast(pc.subtract(submitted, started), pa.int64()), 1e6)
            yield RatingChunk(
                item_row=items.rows_of(np.array([r[0] for r in rows], dtype=np.int64)),
                annotator_pk=np.array([r[1] for r in rows], dtype=np.int64),
                digits=digits.astype(np.int8),
                flags=[flags(r[5]) for r in rows],
                constraints_met=[met(r[6]) for r in rows],
                seconds=seconds,
                source=[SOURCE_NAMES.get(r[4], r[4]) for r in rows],
                created_at=submitted,
            )


def excluded_annotators(*, batch: Batch) -> dict[int, tuple[str, str]]:
    """{user pk: (rule, reason)} of the batch's excluded annotators."""
    return {
        pk: (rule, reason)
        for pk, rule, reason in AnnotatorStanding.objects.filter(batch=batch, excluded=True).values_list(
            "annotator_id", "exclusion_rule", "exclusion_reason"
        )
    }


def usernames(*, pks: list[int]) -> dict[int, str]:
    from django.contrib.auth import get_user_model

    User = get_user_model()
    return dict(User.objects.filter(pk__in=pks).values_list("pk", User.USERNAME_FIELD))


def item_text_chunks(*, batch: Batch, size: int = 5_000) -> Iterator[list[tuple]]:
    """The items' text fields in report order, ``size`` items at a time (the texts are the bulk of the data)."""
    query = (
        Item.objects.filter(batch=batch)
        .order_by("position", "id")
        .values_list(
            "prompt", "response", "context", "expected_output", "constraints", "conversation", "metadata"
        )
    )
    chunk: list[tuple] = []
    for row in query.iterator(chunk_size=size):
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def adjudicated_scores(*, batch: Batch) -> dict[int, dict[str, int]]:
    """{item pk: the adjudicated score per dimension}."""
    return dict(Adjudication.objects.filter(item__batch=batch).values_list("item_id", "scores"))


def gold_item_ids(*, batch: Batch) -> set[str]:
    return set(GoldItem.objects.filter(batch=batch).values_list("item_id", flat=True))
