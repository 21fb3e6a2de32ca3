"""Bradley–Terry by maximum likelihood, with ties as half a win or Davidson's tie model.

Model. System ``i`` has a log-strength ``s_i``; with ``u = s_i − s_j``,

- ``ties="half"`` (Bradley & Terry 1952): P(i beats j) = 1 / (1 + e^(−u)). A tie or a ``both_bad``
  verdict counts as half a win to each side, so a pair's log-likelihood is ``c·u − n·log(1 + e^u)``
  with ``c`` the wins of ``i`` plus half the ties and ``n`` the battles.
- ``ties="davidson"`` (Davidson 1970): with ν ≥ 0, P(i beats j) = π_i / D, P(tie) = ν √(π_i π_j) / D,
  D = π_i + π_j + ν √(π_i π_j), π = e^s. Per pair, ``(w − l)·u/2 + t·log ν − n·log(2 cosh(u/2) + ν)``.

The likelihood depends on differences of scores only; the scores are identified by the constraint
**Σ s_i = 0** over the systems that are fitted (the mean system scores 0), and are natural-log odds.

The maximum exists, and is unique, exactly when the comparison graph (an edge i → j when i won at least
part of a battle against j; a tie counts both ways) is strongly connected (Zermelo 1929; Ford 1957).
:func:`standing` finds the largest strongly connected group of systems; a system outside it is ``above``
(it reaches the group and nothing in the group beats it: its MLE is +∞), ``below`` (−∞) or ``apart``
(no comparison path either way: its score is not identified at all).

All fits here are Newton's method on a batch of count tables at once (the bootstrap's replicates),
each step halved until the log-likelihood does not fall. The gradient is tested against a direct
scipy fit of the same likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csgraph, csr_matrix

__all__ = ["TIES", "FitCounts", "fit_counts", "standing"]

TIES = ("half", "davidson")
_MIN_LOG_NU = -30.0  # ν ≈ 1e-13: Davidson without ties at all, where the MLE of ν is 0


def _incidence(pairs: np.ndarray, k: int) -> np.ndarray:
    e = np.zeros((len(pairs), k))
    e[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    e[np.arange(len(pairs)), pairs[:, 1]] = -1.0
    return e


def _terms(u, phi, counts, ties):
    """Per-pair log-likelihood and its derivatives in u (and in φ = log ν for Davidson)."""
    w, lost, t = counts[..., 0], counts[..., 1], counts[..., 2]
    n = w + lost + t
    if ties == "half":
        p = 0.5 * (1 + np.tanh(u / 2))  # logistic, without overflow
        ll = (w + t / 2) * u - n * np.logaddexp(0, u)
        return ll.sum(-1), (w + t / 2) - n * p, n * p * (1 - p), None
    nu = np.exp(phi)[..., None]
    ch, sh = np.cosh(u / 2), np.sinh(u / 2)
    den = 2 * ch + nu
    a, c = sh / den, nu / den
    h_uu = (0.5 * ch * den - sh**2) / den**2
    ll = (w - lost) * u / 2 + t * phi[..., None] - n * np.log(den)
    extra = ((t - n * c).sum(-1), (n * c * (1 - c)).sum(-1), -n * a * c)
    return ll.sum(-1), (w - lost) / 2 - n * a, n * h_uu, extra


def _laplacian(pairs: np.ndarray, k: int) -> csr_matrix:
    """Maps a weight per pair to the k × k information matrix Σ_q w_q (e_i − e_j)(e_i − e_j)ᵀ, flattened."""
    i, j = pairs[:, 0], pairs[:, 1]
    q = np.arange(len(pairs))
    cols = np.concatenate([i * k + i, j * k + j, i * k + j, j * k + i])
    vals = np.repeat([1.0, 1.0, -1.0, -1.0], len(pairs))
    return csr_matrix((vals, (np.tile(q, 4), cols)), shape=(len(pairs), k * k))


def _step(s, phi, counts, e, lap, ties):
    """Newton direction for every replicate; the gauge Σ s = 0 is fixed by adding 11ᵀ/k."""
    k = e.shape[1]
    ll, g_u, kappa, extra = _terms(s @ e.T, phi, counts, ties)
    grad = g_u @ e
    # A sparse product keeps the assembly linear in the pairs (an einsum over pairs × k² is not).
    info = np.asarray((lap.T @ kappa.T).T).reshape(-1, k, k)
    # A replicate can leave a system without battles: the tiny ridge keeps its (zero) step defined.
    info = info + 1.0 / k + 1e-12 * np.eye(k)
    if ties == "davidson":
        g_phi, i_phi, i_cross = extra
        cross = i_cross @ e
        info = np.concatenate(
            [
                np.concatenate([info, cross[:, :, None]], 2),
                np.concatenate([cross, i_phi[:, None] + 1e-12], 1)[:, None],
            ],
            1,
        )
        grad = np.concatenate([grad, g_phi[:, None]], 1)
    return ll, np.linalg.solve(info, grad[..., None])[..., 0]


@dataclass(frozen=True)
class FitCounts:
    """Scores (B × k, each row summing to zero), log ν (B, Davidson only), log-likelihoods and convergence."""

    scores: np.ndarray
    log_nu: np.ndarray | None
    loglik: np.ndarray
    converged: np.ndarray


def fit_counts(
    totals, pairs, k: int, *, ties: str = "half", init=None, tol: float = 1e-10, max_iter: int = 200
):
    """Fit every count table of ``totals`` (B × pairs × 3, or pairs × 3 for one) by maximum likelihood.

    ``init`` is a starting point (scores, and log ν for Davidson) shared by all tables: the bootstrap
    starts every replicate from the full data's estimate. The caller checks :func:`standing` first; on a
    graph that is not strongly connected the scores drift towards ±∞ and ``converged`` is false.
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, not {ties!r}")
    counts = np.asarray(totals, dtype=float)
    counts = counts[None] if counts.ndim == 2 else counts
    b, e, lap = counts.shape[0], _incidence(np.asarray(pairs), k), _laplacian(np.asarray(pairs), k)
    s = np.zeros((b, k)) if init is None else np.broadcast_to(np.asarray(init[0], float), (b, k)).copy()
    phi = None
    if ties == "davidson":
        t_rate = counts[..., 2].sum(-1) / np.maximum(counts.sum((-1, -2)), 1)
        start = np.log(np.maximum(2 * t_rate / np.maximum(1 - t_rate, 1e-9), 1e-6))
        phi = start if init is None or init[1] is None else np.full(b, float(init[1]))
    with _one_blas_thread():
        return _newton(s, phi, counts, e, lap, ties, tol, max_iter)


def _one_blas_thread():
    """One BLAS thread: each of the thousands of k × k solves is too small to share, and on a busy machine
    OpenBLAS's threads only contend for the cores (60 systems: 20 s with them, 2.3 s without)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def _newton(s, phi, counts, e, lap, ties, tol, max_iter) -> FitCounts:
    b, k = s.shape
    converged = np.zeros(b, dtype=bool)
    ll = np.full(b, -np.inf)
    for _ in range(max_iter):
        ll, d = _step(s, phi, counts, e, lap, ties)
        factor = np.ones(b)
        for _halving in range(40):
            s_new = s + factor[:, None] * d[:, :k]
            phi_new = None if phi is None else np.maximum(phi + factor * d[:, k], _MIN_LOG_NU)
            ll_new = _terms(s_new @ e.T, phi_new, counts, ties)[0]
            worse = ~(ll_new >= ll - 1e-12 * np.abs(ll))
            if not worse.any():
                break
            factor = np.where(worse, factor / 2, factor)
        s, phi, ll = s_new - s_new.mean(1, keepdims=True), phi_new, ll_new
        converged = np.abs(factor[:, None] * d).max(1) < tol
        if converged.all():
            break
    return FitCounts(s, phi, ll, converged)


def standing(totals, pairs, k: int) -> tuple[np.ndarray, list[str]]:
    """The largest strongly connected group of systems, and each system's standing towards it.

    Returns a boolean mask of the group and, per system, ``"fitted"``, ``"above"``, ``"below"`` or
    ``"apart"`` (see the module's docstring). Ties count as an edge both ways.

    >>> mask, how = standing([[3, 0, 0], [1, 1, 0]], [[0, 1], [1, 2]], 3)
    >>> mask.tolist(), how
    ([False, True, True], ['above', 'fitted', 'fitted'])
    """
    counts, pairs = np.asarray(totals, dtype=float), np.asarray(pairs)
    forward = (counts[:, 0] + counts[:, 2]) > 0  # the lower index won something
    backward = (counts[:, 1] + counts[:, 2]) > 0
    rows = np.concatenate([pairs[forward, 0], pairs[backward, 1]])
    cols = np.concatenate([pairs[forward, 1], pairs[backward, 0]])
    graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(k, k))
    _, label = csgraph.connected_components(graph, directed=True, connection="strong")
    battles = np.zeros(k)
    np.add.at(battles, pairs.ravel(), np.repeat(counts.sum(1), 2))
    sizes = np.bincount(label, minlength=label.max() + 1)
    weight = np.bincount(label, weights=battles, minlength=label.max() + 1)
    main = int(np.lexsort((-weight, -sizes))[0])
    mask = label == main
    reach = np.isfinite(csgraph.shortest_path(graph, unweighted=True))
    anchor = int(np.flatnonzero(mask)[0])
    how = []
    for i in range(k):
        if mask[i]:
            how.append("fitted")
        elif reach[i, anchor] and not reach[anchor, i]:
            how.append("above")
        elif reach[anchor, i] and not reach[i, anchor]:
            how.append("below")
        else:
            how.append("apart")
    return mask, how
