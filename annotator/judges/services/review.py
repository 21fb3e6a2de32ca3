"""Writes of the judge feature."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.counted import counted
from annotator.judges.selectors.draws import draw_in_force
from annotator.models import Batch, Item, Judge, ReviewDraw, ReviewDrawItem


@transaction.atomic
def items_queue_first(*, batch: Batch, item_ids: list[str]) -> int:
    """Put ``item_ids`` first in ``batch``'s queue, in the order given; returns how many moved.

    The lease hands out the items with ``queue_first`` > 0 before every other, highest first, whatever
    their progress; the chosen items take len(ids), …, 2, 1 and every other item of the batch goes back to
    0 (the list replaces an earlier one). The batch's own order (``queue_rank``) is left as it was, so the
    report can still tell labels of the random order from these. Unknown ids raise ValueError and change
    nothing."""
    ids = list(dict.fromkeys(item_ids))
    found = dict(
        Item.objects.select_for_update().filter(batch=batch, item_id__in=ids).values_list("item_id", "pk")
    )
    missing = [i for i in ids if i not in found]
    if missing:
        raise ValueError(
            f"{counted(len(missing), 'item id', 'item ids')} {'is' if len(missing) == 1 else 'are'} not in batch {batch.name!r}: {', '.join(missing[:5])}"
        )
    queue_first_clear(batch=batch)
    for rank, item_id in enumerate(ids):
        Item.objects.filter(pk=found[item_id]).update(queue_first=len(ids) - rank)
    return len(ids)


def queue_first_clear(*, batch: Batch) -> int:
    """Back to the batch's own order: no item is handed out first any more."""
    return Item.objects.filter(batch=batch, queue_first__gt=0).update(queue_first=0)


class DrawError(ValueError):
    """Why a draw cannot be made as asked; nothing was saved."""


def ranked_queue_first(*, batch: Batch, item_ids: list[str]) -> int:
    """``items_queue_first`` for the ranked list, refused while a draw is in force: the report would leave
    the labels those items get unused, and the drawn items would wait behind them."""
    in_force = draw_in_force(batch)
    if in_force is not None:
        raise DrawError(
            f"batch {batch.name!r} has draw #{in_force.pk} in force, and the report does not use labels of items "
            "it did not pick; retire the draw first"
        )
    moved = items_queue_first(batch=batch, item_ids=item_ids)
    if moved:
        Batch.objects.filter(pk=batch.pk).update(ranked_first_at=timezone.now())
    return moved


MAX_SEED = 2**31 - 1
# Share of the budget spread uniformly: every π is at least MIX · budget / N, so no label weighs more than
# twice what it would in a uniform draw (hcs.routing.sampling_probabilities). At 0.1 the interval covered
# 0.91-0.92 when the uncertainty was concentrated (a few very unsure items), tiny π on the rest making
# the weighted labels heavy-tailed; at 0.5, 0.94-0.96 (tests/hcs/test_routing_coverage.py, docs/ppi.md).
MIX = 0.5
# What routing did to the interval on HANNA, in % wider than a random draw (bench/routing_hanna.py: π from the
# four LLM judges' disagreement as drawn here, budget 100, each judge × criterion's real residuals). The
# 11-13 % quoted before came from the draw with a tenth of the budget spread evenly.
HANNA_WIDENING = (0.5, 2.0)


def parse_budget(value, n_candidates: int) -> int:
    """The label budget from a form, a query or the command line, or a DrawError that says what is wrong."""
    try:
        budget = int(str(value).strip())
    except (TypeError, ValueError):
        raise DrawError(f"the budget must be a whole number of labels, not {value!r}") from None
    if not 1 <= budget <= n_candidates:
        raise DrawError(
            f"the budget must lie between 1 and {n_candidates:,} (the unlabelled items with a judge score), "
            f"not {budget}"
        )
    return budget


def parse_seed(value) -> int:
    """A seed from 0 to 2³¹ − 1; none given: one is chosen at random and recorded with the draw."""
    if value is None or str(value).strip() == "":
        return secrets.randbelow(MAX_SEED + 1)
    try:
        seed = int(str(value).strip())
    except (TypeError, ValueError):
        raise DrawError(f"the seed must be a whole number, not {value!r}") from None
    if not 0 <= seed <= MAX_SEED:
        raise DrawError(f"the seed must lie between 0 and {MAX_SEED:,}, not {seed}")
    return seed


def _design(batch: Batch, budget, judges: list[str] | None):
    """The candidates (in a fixed order, so the same seed draws the same items), the budget, their
    uncertainty and π: what a draw is made from, and what its forecast reads."""
    from annotator.judges.selectors.review import ReviewError, ranked_candidates
    from hcs.routing import sampling_probabilities

    try:
        rows = ranked_candidates(batch=batch, judges=judges)
    except ReviewError as exc:
        raise DrawError(str(exc)) from None
    if not rows:
        raise DrawError(
            f"batch {batch.name!r} has no unlabelled item with a judge score: nothing to draw from"
        )
    budget = parse_budget(budget, len(rows))
    rows.sort(key=lambda r: r.item_pk)
    uncertainty = np.array([np.nan if r.uncertainty is None else r.uncertainty for r in rows])
    return rows, budget, uncertainty, sampling_probabilities(uncertainty, budget, mix=MIX)


@dataclass(frozen=True)
class DrawForecast:
    """What routing is expected to do to the interval, against a random draw of the same expected size."""

    if_uncertainty_tracks_error: (
        float  # width ratio when the judge's error SD is proportional to the uncertainty
    )
    if_it_does_not: float  # width ratio when the error is the same on every item (≥ 1)
    min_pi: float
    floor: float  # the bound: MIX · budget / candidates

    def sentence(self) -> str:
        def change(ratio: float) -> str:
            return f"narrow it by {1 - ratio:.0%}" if ratio < 1 else f"widen it by {ratio - 1:.0%}"

        return (
            "Against a random draw of the same size, routing is expected to "
            f"{change(self.if_uncertainty_tracks_error)} if the judges' uncertainty tracks their error, and to "
            f"{change(self.if_it_does_not)} if it does not (on HANNA it widened it by "
            f"{HANNA_WIDENING[0]:g}-{HANNA_WIDENING[1]:g} %: check with a random pilot first). Smallest inclusion probability {self.min_pi:.4f} (bound: {self.floor:.4f}, "
            f"{MIX:g} × budget / candidates)."
        )


def review_draw_forecast(*, batch: Batch, budget, judges: list[str] | None = None) -> DrawForecast:
    """Before drawing: whether routing should narrow or widen the interval (``hcs.routing.width_against_uniform``).
    Raises DrawError as :func:`review_draw_make` does."""
    from hcs.routing import width_against_uniform

    rows, budget, uncertainty, pi = _design(batch, budget, judges)
    known = np.where(
        np.isfinite(uncertainty),
        uncertainty,
        np.nanmean(uncertainty) if np.isfinite(uncertainty).any() else 1.0,
    )
    return DrawForecast(
        if_uncertainty_tracks_error=width_against_uniform(pi, np.maximum(known, 1e-9) ** 2),
        if_it_does_not=width_against_uniform(pi),
        min_pi=float(pi.min()),
        floor=MIX * budget / len(rows),
    )


def review_draw_make(
    *, batch: Batch, budget, seed=None, judges: list[str] | None = None, user=None
) -> ReviewDraw:
    """Draw items for review at random, item i with probability π_i ∝ its judge uncertainty (Σπ = budget),
    record every candidate's π and whether it was drawn, and put the drawn items first in the queue.

    Candidates are the unlabelled items with a judge score (``ranked_candidates``); items already labelled
    join the record with π = 1, so the report can estimate over the whole batch. The drawn items enter the
    queue in a random order, so the ones labelled first are a random share of the draw. Raises DrawError
    (nothing saved) for a bad budget or seed, a batch without judge scores or one with a draw in force."""
    in_force = draw_in_force(batch)
    if in_force is not None:
        raise DrawError(
            f"batch {batch.name!r} already has draw #{in_force.pk} (made {in_force.made_at:%Y-%m-%d %H:%M} UTC); "
            "retire it before drawing again"
        )
    seed = parse_seed(seed)
    rows, budget, uncertainty, pi = _design(batch, budget, judges)
    rng = np.random.default_rng(seed)
    drawn = rng.random(len(rows)) < pi
    queue = [rows[i].item_id for i in rng.permutation(np.flatnonzero(drawn))]
    candidates = {r.item_pk for r in rows}
    before = Item.objects.filter(batch=batch, annotations__isnull=False).exclude(pk__in=candidates).distinct()
    names = judges or sorted(
        Judge.objects.filter(scores__item__batch=batch).distinct().values_list("name", flat=True)
    )
    try:
        with transaction.atomic():
            draw = ReviewDraw.objects.create(
                batch=batch, budget=budget, seed=seed, mix=MIX, judges=sorted(set(names)), made_by=user
            )
            ReviewDrawItem.objects.bulk_create(
                [
                    ReviewDrawItem(
                        draw=draw, item_id=r.item_pk, pi=float(p), drawn=bool(d), uncertainty=r.uncertainty
                    )
                    for r, p, d in zip(rows, pi, drawn)
                ]
                + [
                    ReviewDrawItem(draw=draw, item_id=pk, pi=1.0, drawn=True, labelled_before=True)
                    for pk in before.values_list("pk", flat=True).iterator()
                ],
                batch_size=2000,
            )
            if queue:
                items_queue_first(batch=batch, item_ids=queue)
    except IntegrityError:  # another draw was made for this batch at the same moment
        raise DrawError(
            f"batch {batch.name!r} already has a draw in force; retire it before drawing again"
        ) from None
    return draw


def review_draw_retire(*, batch: Batch) -> ReviewDraw | None:
    """Retire the batch's draw in force (its record stays; the report goes back to PPI++); None if there is none."""
    draw = draw_in_force(batch)
    if draw is None:
        return None
    with transaction.atomic():
        ReviewDraw.objects.filter(pk=draw.pk).update(retired_at=timezone.now())
        queue_first_clear(batch=batch)  # the drawn items no longer go before the others
    draw.refresh_from_db()
    return draw
