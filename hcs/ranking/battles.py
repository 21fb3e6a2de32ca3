"""Battles as typed arrays, and their counts per prompt, system pair and outcome.

A battle is one verdict on two systems' answers to one prompt: ``a`` won, ``b`` won, a ``tie``, or
``both_bad``. Every method of :mod:`hcs.ranking` takes a :class:`Battles`; the bootstrap works on
:func:`prompt_counts`, which turns a hundred thousand rows into one small count table per prompt so that
a resample reweights prompts instead of copying rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

__all__ = ["OUTCOMES", "Battles", "PromptCounts", "battles", "outcome_codes", "prompt_counts"]

#: Outcome codes, in this order: 0 ``a``, 1 ``b``, 2 ``tie``, 3 ``both_bad``.
OUTCOMES = ("a", "b", "tie", "both_bad")
_CODE = {name: code for code, name in enumerate(OUTCOMES)}


@dataclass(frozen=True, eq=False)
class Battles:
    """Validated battles: four integer arrays of one length and the number of systems.

    ``prompt`` is a code per prompt (battles on the same prompt share it), ``a`` and ``b``
    are system indices in ``0..n_systems-1`` and ``outcome`` the code of :data:`OUTCOMES`. ``left`` is
    optional: 0 when ``a`` was shown on the left, 1 when ``b`` was, −1 when unknown.
    """

    prompt: np.ndarray
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    n_systems: int
    left: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.outcome)

    def subset(self, mask) -> Battles:
        """The battles where ``mask`` is true (a boolean array or an index array)."""
        left = None if self.left is None else self.left[mask]
        return Battles(
            self.prompt[mask], self.a[mask], self.b[mask], self.outcome[mask], self.n_systems, left
        )

    def credit_a(self, tie_credit: float = 0.5) -> np.ndarray:
        """The share of each battle won by ``a``: 1, 0, or ``tie_credit`` for a tie or both bad."""
        return np.choose(self.outcome, [1.0, 0.0, tie_credit, tie_credit])


def outcome_codes(outcome) -> np.ndarray:
    """Outcome names (or codes 0–3) as codes; the first unknown one raises a ``ValueError`` naming it."""
    values = np.asarray(outcome)
    if values.dtype.kind in "iu":
        codes = values.astype(np.int64)
        bad = np.flatnonzero((codes < 0) | (codes > 3))
    else:
        codes = np.array([_CODE.get(str(v), -1) for v in values.ravel()], dtype=np.int64)
        bad = np.flatnonzero(codes < 0)
    if len(bad):
        raise ValueError(
            f"battle {bad[0]}: outcome {values.ravel()[bad[0]]!r} is not one of {', '.join(OUTCOMES)}"
        )
    return codes


def _left(left, n: int) -> np.ndarray | None:
    if left is None:
        return None
    names = {"a": 0, "b": 1, "": -1, "None": -1, "0": 0, "1": 1, "-1": -1}
    codes = np.array([names.get(str(v), -2) for v in np.asarray(left, dtype=object).ravel()], dtype=np.int64)
    if len(codes) != n or (codes == -2).any():
        where = len(codes) if len(codes) != n else int(np.flatnonzero(codes == -2)[0])
        raise ValueError(
            f"left must name a or b (or be empty) for each of the {n} battles; check battle {where}"
        )
    return codes


def battles(prompt, system_a, system_b, outcome, *, n_systems: int | None = None, left=None) -> Battles:
    """Check and encode battles; the first bad battle is named in a ``ValueError``.

    Examples
    --------
    >>> bt = battles([0, 0, 1], [0, 1, 0], [1, 2, 2], ["a", "tie", "both_bad"])
    >>> bt.n_systems, bt.outcome.tolist(), bt.credit_a().tolist()
    (3, [0, 2, 3], [1.0, 0.5, 0.5])
    """
    arrays = [np.asarray(x).ravel() for x in (prompt, system_a, system_b)]
    codes = outcome_codes(outcome)
    n = len(codes)
    if any(len(x) != n for x in arrays):
        raise ValueError(
            f"prompt, system_a, system_b and outcome differ in length: {[len(x) for x in arrays]} vs {n}"
        )
    for name, x in zip(("system_a", "system_b"), arrays[1:], strict=True):
        if n and x.dtype.kind not in "iu":
            raise ValueError(f"{name} must hold integer indices, not {x.dtype}")
    # Prompt labels may be anything sortable (ids or texts); battles on one prompt share a code.
    p = np.unique(arrays[0], return_inverse=True)[1].astype(np.int64).ravel() if n else np.zeros(0, np.int64)
    a, b = (x.astype(np.int64) for x in arrays[1:])
    k = int(max(a.max(initial=-1), b.max(initial=-1)) + 1) if n_systems is None else int(n_systems)
    for name, x in (("system_a", a), ("system_b", b)):
        bad = np.flatnonzero((x < 0) | (x >= k))
        if len(bad):
            raise ValueError(f"battle {bad[0]}: {name} {x[bad[0]]} is outside 0..{k - 1}")
    same = np.flatnonzero(a == b)
    if len(same):
        raise ValueError(f"battle {same[0]}: a system cannot battle itself (system {a[same[0]]})")
    return Battles(p, a, b, codes, k, _left(left, n))


@dataclass(frozen=True, eq=False)
class PromptCounts:
    """Battles counted per prompt: ``table`` is prompts × (pairs · 3), a sparse count matrix.

    Pair ``q`` is ``(pairs[q, 0], pairs[q, 1])`` with the lower index first; its three columns count that
    system's wins, the other's wins, and ties (``tie`` and ``both_bad`` together).
    """

    table: sparse.csr_matrix
    pairs: np.ndarray
    n_systems: int

    @property
    def n_prompts(self) -> int:
        return self.table.shape[0]

    def totals(self, weights=None) -> np.ndarray:
        """Counts per pair and outcome (pairs × 3), or one table per row of prompt ``weights`` (B × pairs × 3)."""
        if weights is None:
            return np.asarray(self.table.sum(axis=0)).reshape(-1, 3)
        w = np.asarray(weights, dtype=float)
        return np.asarray((self.table.T @ w.T).T).reshape(w.shape[0], -1, 3)


def prompt_counts(bt: Battles) -> PromptCounts:
    """Count the battles per prompt, system pair and outcome (the input of the bootstrap).

    >>> pc = prompt_counts(battles([5, 5, 7], [0, 1, 0], [1, 0, 1], ["a", "a", "tie"]))
    >>> pc.n_prompts, pc.pairs.tolist(), pc.totals().tolist()
    (2, [[0, 1]], [[1.0, 1.0, 1.0]])
    """
    lo, hi = np.minimum(bt.a, bt.b), np.maximum(bt.a, bt.b)
    pair_key = lo * bt.n_systems + hi
    keys, pair = np.unique(pair_key, return_inverse=True)
    pairs = np.stack([keys // bt.n_systems, keys % bt.n_systems], axis=1)
    # Orient each outcome to the pair's lower index: "a won" is "lower won" only when a is the lower.
    swapped = bt.a > bt.b
    col = np.minimum(bt.outcome, 2)
    col = np.where(swapped & (col < 2), 1 - col, col)
    _, prompt = np.unique(bt.prompt, return_inverse=True)
    n_prompts = int(prompt.max(initial=-1) + 1)
    table = sparse.csr_matrix((np.ones(len(bt)), (prompt, pair * 3 + col)), shape=(n_prompts, 3 * len(pairs)))
    table.sum_duplicates()
    return PromptCounts(table, pairs, bt.n_systems)
