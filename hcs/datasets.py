"""Read a published study (the Hugging Face dataset folder ``export_report --format hf`` writes)
back into the arrays :mod:`hcs.agreement` takes, and the soft labels its ``items`` config holds.

The folder holds one parquet file per config (``data/<config>/train.parquet``) and a dataset card.
The ratings file carries, in its schema metadata under ``hcs``, the rubric's dimensions, scale, k
and the report's bootstrap settings, so :func:`load` needs nothing but the folder, and
``load(folder).agreement(dim)`` gives the report's coefficients exactly (the same counts, in the same
item order, with the same seed).

pyarrow is imported when a folder is read, so the rest of ``hcs`` works without it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hcs.agreement import DimensionAgreement, dimension_agreement
from hcs.quality import count_cube

__all__ = [
    "CONFIGS",
    "DatasetError",
    "METADATA_KEY",
    "StudyRatings",
    "config_path",
    "label_entropy",
    "load",
    "soft_labels",
]

CONFIGS = ("ratings", "items", "judge_scores", "pairwise_verdicts")
METADATA_KEY = b"hcs"  # the ratings file's schema metadata: JSON with dimensions, scale, k, bootstrap
SPLIT = "train"


class DatasetError(ValueError):
    """The folder is not a dataset this module wrote, or one of its files is damaged."""


def config_path(config: str) -> str:
    """Where a config's rows live, relative to the dataset folder (the card's ``data_files``).

    >>> config_path("ratings")
    'data/ratings/train.parquet'
    """
    return f"data/{config}/{SPLIT}.parquet"


def soft_labels(counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Counts per category → the share of ratings in each (the soft label); NaN rows where no one rated.

    Parameters
    ----------
    counts : array_like, shape (..., categories)
        How many raters gave each score.

    Returns
    -------
    numpy.ndarray of float, same shape
        Each row sums to 1 (or is all NaN).

    References
    ----------
    Uma, A. N. et al. (2021). Learning from disagreement: a survey. *Journal of Artificial
    Intelligence Research* 72, 1385–1470 (soft labels as the normalised rating distribution).

    Examples
    --------
    >>> soft_labels([[0, 0, 1, 2, 1], [0, 0, 0, 0, 0]]).round(2).tolist()
    [[0.0, 0.0, 0.25, 0.5, 0.25], [nan, nan, nan, nan, nan]]
    """
    table = np.asarray(counts, dtype=np.float64)
    total = table.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, table / np.where(total > 0, total, 1), np.nan)


def label_entropy(probabilities: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Shannon entropy in bits of each soft label (0: everyone agreed; log2(categories): uniform).

    Parameters
    ----------
    probabilities : array_like, shape (..., categories)
        Rows summing to 1; an all-NaN row (no ratings) gives NaN.

    Returns
    -------
    numpy.ndarray of float, shape (...)

    References
    ----------
    Shannon, C. E. (1948). A mathematical theory of communication. *Bell System Technical Journal*
    27(3), 379–423.

    Examples
    --------
    >>> label_entropy([[0.5, 0.5, 0, 0, 0], [0, 0, 1, 0, 0]]).tolist()
    [1.0, 0.0]
    """
    p = np.asarray(probabilities, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1)), 0.0)
    out = terms.sum(axis=-1)
    return np.where(np.isnan(p).any(axis=-1), np.nan, out + 0.0)  # + 0.0: no negative zero


@dataclass(frozen=True, eq=False)
class StudyRatings:
    """A published study's ratings as arrays, one entry per rating (annotation).

    ``item_index`` points into ``item_ids`` (the ``items`` config's order, which is the report's);
    ``scores`` is ratings × dimensions with NaN where a dimension was not rated; ``order`` is each
    rating's rank in submission order; ``excluded`` marks the ratings of excluded raters, which the
    report's statistics leave out.
    """

    dimensions: tuple[str, ...]
    categories: tuple[int, ...]
    k: int
    item_ids: list[str]
    item_index: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    rater: npt.NDArray[np.object_]
    excluded: npt.NDArray[np.bool_]
    order: npt.NDArray[np.int64]
    n_resamples: int
    seed: int

    def _cubes(self, include_excluded: bool) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        keep = np.ones(len(self.order), dtype=bool) if include_excluded else ~self.excluded
        item, scores, keep = self.item_index[self.order], self.scores[self.order], keep[self.order]
        n = len(self.item_ids)
        return (
            count_cube(item, scores, n_items=n, levels=self.categories, keep=keep),
            count_cube(item, scores, n_items=n, levels=self.categories, keep=keep, first_k=self.k),
        )

    def counts(self, dimension: str, *, include_excluded: bool = False) -> npt.NDArray[np.int64]:
        """Items × categories counts of one dimension (every item, in the ``items`` order)."""
        return self._cubes(include_excluded)[0][self.dimensions.index(dimension)]

    def fleiss_counts(self, dimension: str, *, include_excluded: bool = False) -> npt.NDArray[np.int64]:
        """The first ``k`` ratings (by submission) of the items rated at least ``k`` times; other rows 0."""
        return self._cubes(include_excluded)[1][self.dimensions.index(dimension)]

    def agreement(
        self,
        dimension: str,
        *,
        n_resamples: int | None = None,
        seed: int | None = None,
        include_excluded: bool = False,
    ) -> DimensionAgreement:
        """:func:`hcs.agreement.dimension_agreement` as the report calls it (the report's bootstrap
        settings unless given; dimension ``j`` uses ``seed + j``, as the report does)."""
        j = self.dimensions.index(dimension)
        counts, fleiss = (cube[j] for cube in self._cubes(include_excluded))
        return dimension_agreement(
            counts[counts.sum(axis=1) > 0],
            fleiss[fleiss.sum(axis=1) > 0],
            list(self.categories),
            k=self.k,
            n_resamples=self.n_resamples if n_resamples is None else n_resamples,
            seed=(self.seed if seed is None else seed) + j,
        )


def _read(folder: Path, config: str) -> Any:
    import pyarrow.parquet as pq

    path = folder / config_path(config)
    if not path.is_file():
        raise DatasetError(f"{path} is missing: is {folder} a folder written by export_report --format hf?")
    try:
        return pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DatasetError(f"{path} could not be read as parquet: {exc}") from exc


def _metadata(table: Any, folder: Path) -> dict[str, Any]:
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise DatasetError(f"{folder / config_path('ratings')} has no '{METADATA_KEY.decode()}' metadata")
    return json.loads(raw)


def _submission_rank(created_at: Sequence[Any]) -> npt.NDArray[np.int64]:
    """Row order sorted by submission time, stably (ratings of the same moment keep file order)."""
    when = np.asarray(created_at, dtype="datetime64[us]")
    return np.argsort(when, kind="stable").astype(np.int64)


def load(folder: str | Path) -> StudyRatings:
    """Read a dataset folder's ratings into arrays for :mod:`hcs.agreement`.

    Parameters
    ----------
    folder : str or Path
        The folder ``export_report BATCH --format hf --out DIR`` wrote (or a download of it).

    Returns
    -------
    StudyRatings
        With :meth:`StudyRatings.agreement`, the report's κ, α and AC2 per dimension.

    Raises
    ------
    DatasetError
        When a file is missing or damaged, or a rating names an item the ``items`` config lacks.

    References
    ----------
    Fleiss (1971), Krippendorff (2011) and Gwet (2014), as in :mod:`hcs.agreement`.
    """
    folder = Path(folder)
    ratings = _read(folder, "ratings")
    meta = _metadata(ratings, folder)
    dims = tuple(meta["dimensions"])
    lo, hi = meta["scale"]
    item_ids = [str(i) for i in _read(folder, "items").column("item_id").to_pylist()]
    row_of = {item: n for n, item in enumerate(item_ids)}
    rated_items = ratings.column("item_id").to_pylist()
    try:
        item_index = np.fromiter((row_of[i] for i in rated_items), dtype=np.int64, count=len(rated_items))
    except KeyError as exc:
        raise DatasetError(
            f"a rating names item {exc.args[0]!r}, which the items config does not list"
        ) from exc
    scores = (
        np.column_stack([ratings.column(d).to_numpy(zero_copy_only=False).astype(np.float64) for d in dims])
        if dims
        else np.zeros((len(rated_items), 0))
    )
    scores = scores.reshape(len(rated_items), len(dims))
    created = ratings.column("created_at").cast("timestamp[us]").to_numpy(zero_copy_only=False)
    return StudyRatings(
        dimensions=dims,
        categories=tuple(range(int(lo), int(hi) + 1)),
        k=int(meta["k"]),
        item_ids=item_ids,
        item_index=item_index,
        scores=scores,
        rater=np.asarray(ratings.column("rater").to_pylist(), dtype=object),
        excluded=ratings.column("excluded").to_numpy(zero_copy_only=False).astype(bool),
        order=_submission_rank(created),
        n_resamples=int(meta["bootstrap"]["resamples"]),
        seed=int(meta["bootstrap"]["seed"]),
    )
