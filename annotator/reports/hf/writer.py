"""Write a batch as a Hugging Face dataset folder: one parquet file per config and the dataset card.

Written with pyarrow (the app needs no ``datasets`` to publish). Ratings are streamed from the
database and written one record batch at a time, and items a few thousand at a time, so memory
stays a few arrays per annotation however large the batch. The folder is built beside its
destination and renamed into place at the end: a failure leaves no half-written dataset.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annotator.models import Batch
from annotator.reports.hf import card, rows
from annotator.reports.hf.parts import HF_PARTS
from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from hcs.calibration.alt_test import DEFAULT_EPSILON
from hcs.datasets import METADATA_KEY, config_path, label_entropy, soft_labels
from hcs.quality import count_cube
from hcs.scoring import item_summaries, overall_per_annotation

if TYPE_CHECKING:
    from annotator.reports.selectors.batch_report import BatchReport

SCHEMA_VERSION = 1


class DatasetRefused(ValueError):
    """The dataset cannot be written as asked (the message says what to change); nothing was written."""


@dataclass
class Written:
    """What was written: the folder and the rows of each config."""

    folder: Path
    rows: dict[str, int] = field(default_factory=dict)


def ratings_schema(batch: Batch) -> pa.Schema:
    dims = batch.rubric_obj.dimension_keys
    fixed = [
        ("item_id", pa.string()),
        ("system_id", pa.string()),
        ("prompt_id", pa.string()),
        ("rater", pa.string()),
    ]
    tail = [
        ("flags", pa.list_(pa.string())),
        ("constraints_met", pa.list_(pa.bool_())),
        ("seconds", pa.float64()),
        ("source", pa.string()),
        ("excluded", pa.bool_()),
        ("created_at", rows.TIMESTAMP),
    ]
    clash = sorted(set(dims) & {name for name, _ in fixed + tail})
    if clash:
        raise DatasetRefused(
            f"the rubric's dimension {clash[0]!r} has the name of a fixed column of the ratings "
            "table; rename the dimension in the rubric to publish this batch"
        )
    return pa.schema(fixed + [(d, pa.int8()) for d in dims] + tail)


def items_schema(batch: Batch) -> pa.Schema:
    dims = batch.rubric_obj.dimension_keys
    fields = [
        ("item_id", pa.string()),
        ("system_id", pa.string()),
        ("prompt_id", pa.string()),
        ("prompt", pa.string()),
        ("response", pa.string()),
        ("context", pa.string()),
        ("expected_output", pa.string()),
        ("constraints", pa.list_(pa.string())),
        ("conversation", pa.string()),
        ("metadata", pa.string()),
        ("n_annotations", pa.int32()),
    ]
    for d in dims:
        fields += [
            (f"{d}_mean", pa.float64()),
            (f"{d}_dist", pa.list_(pa.float64())),
            (f"{d}_entropy", pa.float64()),
        ]
    fields += [("hcs_mean", pa.float64())]
    fields += [(f"adjudicated_{d}", pa.int8()) for d in dims]
    fields += [("gold", pa.bool_())]
    return pa.schema(fields)


@dataclass
class _Tally:
    """What the items config needs from the ratings, gathered while they stream past."""

    item_row: list[np.ndarray] = field(default_factory=list)
    digits: list[np.ndarray] = field(default_factory=list)
    kept: list[np.ndarray] = field(default_factory=list)

    def arrays(self, n_dims: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.item_row:
            return np.zeros(0, np.int64), np.zeros((0, n_dims), np.int8), np.zeros(0, bool)
        return np.concatenate(self.item_row), np.concatenate(self.digits), np.concatenate(self.kept)


def _pseudonyms(batch: Batch, pks: list[int], rater_names: bool) -> dict[int, str]:
    if rater_names:
        names = rows.usernames(pks=pks)
        return {pk: names.get(pk, f"user {pk}") for pk in pks}
    return {pk: rows.rater_pseudonym(batch_id=batch.pk, user_pk=pk) for pk in pks}


def _write_ratings(
    batch: Batch,
    report: BatchReport,
    folder: Path,
    items: rows.ItemIndex,
    excluded: set[int],
    rater_names: bool,
    raters: dict[int, str],
) -> tuple[int, _Tally]:
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    meta = {
        "schema_version": SCHEMA_VERSION,
        "dimensions": list(dims),
        "scale": [rubric.scale_min, rubric.scale_max],
        "k": batch.k,
        "weights": rubric.weights,
        "bootstrap": {"resamples": report.n_resamples, "seed": report.seed},
    }
    schema = ratings_schema(batch)
    tally, n = _Tally(), 0
    item_ids, system_ids, prompt_ids = (
        pa.array(v, type=pa.string()) for v in (items.item_id, items.system_id, items.prompt_id)
    )
    path = folder / config_path("ratings")
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = pq.ParquetWriter(path, schema.with_metadata({METADATA_KEY: json.dumps(meta)}))
    try:
        for chunk in rows.rating_chunks(batch=batch, items=items):
            pks, which = np.unique(chunk.annotator_pk, return_inverse=True)
            raters.update(_pseudonyms(batch, [int(pk) for pk in pks if int(pk) not in raters], rater_names))
            is_excluded = np.isin(chunk.annotator_pk, list(excluded))
            rows_taken = pa.array(chunk.item_row)
            columns: dict[str, Any] = {
                "item_id": item_ids.take(rows_taken),
                "system_id": system_ids.take(rows_taken),
                "prompt_id": prompt_ids.take(rows_taken),
                "rater": pa.array([raters[int(pk)] for pk in pks], type=pa.string()).take(
                    pa.array(which.ravel())
                ),
            }
            for j, d in enumerate(dims):
                digits = chunk.digits[:, j]
                columns[d] = pa.array(digits + (rubric.scale_min - 1), type=pa.int8(), mask=digits == 0)
            columns.update(
                flags=chunk.flags,
                constraints_met=[list(m) if m else None for m in chunk.constraints_met],
                seconds=chunk.seconds,
                source=chunk.source,
                excluded=is_excluded,
                created_at=chunk.created_at,
            )
            writer.write_batch(
                pa.record_batch(
                    [
                        pa.array(columns[f.name], type=f.type)
                        if not isinstance(columns[f.name], pa.Array)
                        else columns[f.name]
                        for f in schema
                    ],
                    schema=schema,
                )
            )
            tally.item_row.append(chunk.item_row)
            tally.digits.append(chunk.digits)
            tally.kept.append(~is_excluded)
            n += len(chunk.annotator_pk)
    finally:
        writer.close()
    return n, tally


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _write_items(batch: Batch, folder: Path, items: rows.ItemIndex, tally: _Tally) -> int:
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    levels = list(rubric.levels)
    item_row, digits, kept = tally.arrays(len(dims))
    n_items = len(items.pk)
    scores = np.where(digits > 0, digits.astype(np.float64) + (rubric.scale_min - 1), np.nan)
    cube = count_cube(item_row, scores, n_items=n_items, levels=levels, keep=kept)  # dims × items × levels
    dist = soft_labels(cube)
    entropy = label_entropy(dist)
    with np.errstate(invalid="ignore"):
        means = (dist * np.array(levels, dtype=np.float64)).sum(axis=2)
    weights = np.array([d.weight for d in rubric.dimensions])
    overall = overall_per_annotation(scores[kept], weights)
    hcs_mean = item_summaries(item_row[kept], overall, n_items=n_items).mean
    n_kept = np.bincount(item_row[kept], minlength=n_items)
    adjudicated = rows.adjudicated_scores(batch=batch)
    gold = rows.gold_item_ids(batch=batch)
    schema = items_schema(batch)
    path = folder / config_path("items")
    path.parent.mkdir(parents=True, exist_ok=True)
    start = 0
    with pq.ParquetWriter(path, schema) as writer:
        for text in rows.item_text_chunks(batch=batch):
            span = range(start, start + len(text))
            columns: dict[str, Any] = {
                "item_id": [items.item_id[i] for i in span],
                "system_id": [items.system_id[i] for i in span],
                "prompt_id": [items.prompt_id[i] for i in span],
                "prompt": [t[0] for t in text],
                "response": [t[1] for t in text],
                "context": [t[2] for t in text],
                "expected_output": [t[3] for t in text],
                "constraints": [[str(c) for c in (t[4] or [])] for t in text],
                "conversation": [_json_text(t[5]) if t[5] else None for t in text],
                "metadata": [_json_text(t[6]) if t[6] else None for t in text],
                "n_annotations": n_kept[start : start + len(text)],
            }
            for j, d in enumerate(dims):
                columns[f"{d}_mean"] = _nullable(means[j, start : start + len(text)])
                columns[f"{d}_dist"] = _lists(dist[j, span.start : span.stop])
                columns[f"{d}_entropy"] = _nullable(entropy[j, start : start + len(text)])
            columns["hcs_mean"] = _nullable(hcs_mean[start : start + len(text)])
            for d in dims:
                columns[f"adjudicated_{d}"] = [adjudicated.get(int(items.pk[i]), {}).get(d) for i in span]
            columns["gold"] = [items.item_id[i] in gold for i in span]
            writer.write_batch(
                pa.record_batch(
                    [
                        c if isinstance(c := columns[f.name], pa.Array) else pa.array(c, type=f.type)
                        for f in schema
                    ],
                    schema=schema,
                )
            )
            start += len(text)
    return n_items


def _lists(rows: np.ndarray) -> pa.Array:
    """items × levels → one list per item, null where the first entry is NaN (nobody rated it)."""
    width = rows.shape[1]
    offsets = pa.array(np.arange(0, (len(rows) + 1) * width, width, dtype=np.int32))
    return pa.ListArray.from_arrays(
        offsets,
        pa.array(np.nan_to_num(rows.ravel()), type=pa.float64()),
        mask=pa.array(np.isnan(rows[:, 0]) if len(rows) else np.zeros(0, bool)),
    )


def _nullable(values: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.float64(), mask=~np.isfinite(values))


def _write_table(folder: Path, config: str, schema: pa.Schema, data: list[tuple]) -> int:
    path = folder / config_path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = list(zip(*data, strict=True)) if data else [[] for _ in schema]
    arrays = [pa.array(list(c), type=f.type) for c, f in zip(columns, schema, strict=True)]
    pq.write_table(pa.table(arrays, schema=schema), path)
    return len(data)


def destination_check(out: str | Path) -> Path:
    """Check where the dataset goes before anything is computed: a new or empty folder."""
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise DatasetRefused(f"{target} is a file; give a folder for the dataset (--out DIR)")
    if target.is_dir() and any(target.iterdir()):
        raise DatasetRefused(
            f"{target} is not empty; give a new or empty folder, so no earlier file is mixed in"
        )
    if not target.parent.is_dir():
        raise DatasetRefused(f"{target.parent} does not exist; create it first")
    if not os.access(target.parent, os.W_OK):
        raise DatasetRefused(f"{target.parent} is not writable")
    return target


def card_report(
    *,
    batch: Batch,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    epsilon: float = DEFAULT_EPSILON,
) -> BatchReport:
    """The report the card quotes: ``batch_report`` without the agreement-over-time series, which the
    card does not show and which is most of the time a large batch takes."""
    from annotator.reports.selectors.batch_report import batch_report

    return batch_report(
        batch=batch, n_resamples=n_resamples, seed=seed, epsilon=epsilon, quality_over_time=False
    )


def dataset_write(
    *, batch: Batch, report: BatchReport, out: str | Path, rater_names: bool = False
) -> Written:
    """Write ``batch`` (with its ``report``, for the card) as a dataset folder at ``out``.

    Raises :class:`DatasetRefused` (nothing written) when ``out`` is not a new or empty folder or the
    rubric's names clash with the tables' columns."""
    target = destination_check(out)
    ratings_schema(batch)  # refuse a clashing rubric before any work
    staging = Path(tempfile.mkdtemp(prefix=".hf-", dir=target.parent))
    try:
        written = _build(batch=batch, report=report, folder=staging, rater_names=rater_names)
        if target.exists():
            target.rmdir()
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    written.folder = target
    return written


def _build(*, batch: Batch, report: BatchReport, folder: Path, rater_names: bool) -> Written:
    items = rows.item_index(batch=batch)
    exclusions = rows.excluded_annotators(batch=batch)
    raters: dict[int, str] = {}
    written = Written(folder=folder)
    written.rows["ratings"], tally = _write_ratings(
        batch, report, folder, items, set(exclusions), rater_names, raters
    )
    written.rows["items"] = _write_items(batch, folder, items, tally)
    for part in HF_PARTS.values():
        table = part.table_of(batch)
        if table.rows:  # a feature's config is written only when the batch has its rows
            written.rows[part.config] = _write_table(folder, part.config, table.schema, table.rows)
    # Excluded people who rated nothing get a pseudonym too: the data statement counts them.
    missing = [pk for pk in exclusions if pk not in raters]
    raters.update(_pseudonyms(batch, missing, rater_names))
    text = card.dataset_card(
        batch=batch,
        report=report,
        rows=written.rows,
        raters=raters,
        exclusions=exclusions,
        rater_names=rater_names,
    )
    (folder / "README.md").write_text(text, encoding="utf-8")
    return written


def dataset_zip(*, batch: Batch, report: BatchReport | None = None, rater_names: bool = False) -> bytes:
    """The dataset folder as one zip (what the report page and the job hand out): unzip and load.
    ``report``: the card's (``card_report`` with the default options when not given)."""
    report = report if report is not None else card_report(batch=batch)
    with tempfile.TemporaryDirectory(prefix="hf-export-") as tmp:
        folder = Path(tmp) / "dataset"
        dataset_write(batch=batch, report=report, out=folder, rater_names=rater_names)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:  # parquet is compressed
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(folder).as_posix())
        return buffer.getvalue()
