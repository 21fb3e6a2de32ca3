"""Whether a batch's labelled items are the random sample PPI++ assumes: ``judges.<judge>.<dim>.ppi.sample``.

PPI++ (``hcs.ppi``) is unbiased only when the human-labelled items are a random sample of the batch, or a
draw with recorded probabilities (active inference, ``annotator.judges.selectors.validation``). The
report says which one it has, one of ``SAMPLES``:

``recorded_draw``
    A review draw is in force (``select_for_review --draw``): its labels are weighted by 1/π.
``declared_random``
    Some labels were imported from a file (annotations with source ``import``), and the import said they
    are a random sample of the batch (``import_annotations --labelled-at-random``); any labels given
    through the queue besides them pass the ``random_order`` test below on the items not imported.
``random_order``
    Every label came through the queue, the batch has a random order (``Batch.order_seed``,
    ``annotator.rating.services.queue_order``), and the labelled items are a prefix of that order as handed out:
    no item ranked before the last labelled one lacks a label, except items on a live lease and up to
    ``WINDOW`` others (the lease picks at random among the first ``WINDOW`` free items, so the frontier is
    ragged by that much). A hole that someone skipped is never excused: a skip depends on the item's
    content. Items added after labelling began fall among the rest at random (their keys are random), so
    they do not break the prefix.
``not_random``
    Anything else: a batch in file order (made before the random order), offline labels imported without
    the flag, labels given through the queue after a ranked list was put first (``Batch.ranked_first_at``),
    or holes in the prefix (items skipped by everyone, a ranked list put first, a retired draw's
    labels). The estimate and its interval are then null, and ``why`` and ``fix`` say what to do.

One rule for the whole batch, computed once per report: every judge × dimension entry carries it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotator.counted import counted
from annotator.models import Annotation, Assignment, Batch, Item
from annotator.rating.services.assignment_sql import WINDOW
from annotator.selectors.streams import stream_of_batch

if TYPE_CHECKING:
    import numpy as np

    from annotator.reports.selectors.arrays import ReportArrays

RANDOM_ORDER, RECORDED_DRAW, DECLARED_RANDOM, NOT_RANDOM = (
    "random_order",
    "recorded_draw",
    "declared_random",
    "not_random",
)
SAMPLES = (RANDOM_ORDER, RECORDED_DRAW, DECLARED_RANDOM, NOT_RANDOM)


def draw_fix(batch: Batch) -> str:
    """How to get labels with recorded probabilities: the page's draw, or the command for this batch."""
    return (
        "make a review draw (“Draw items for people, recorded” on the page “Items for people where the "
        f"judges are unsure”, or select_for_review {shlex.quote(batch.name)} --draw N) and label the items "
        "it puts first"
    )


@dataclass(frozen=True)
class LabelledSample:
    kind: str  # one of SAMPLES
    why: str  # one sentence: what makes the labelled set random, or why it is not
    fix: str = ""  # with not_random: how to get an estimate
    census: bool = False  # every item is labelled: the batch's mean is known, PPI++ has nothing to add

    @property
    def random(self) -> bool:
        return self.kind != NOT_RANDOM

    def to_json(self) -> dict:
        return {"sample": self.kind, "sample_why": self.why, **({"sample_fix": self.fix} if self.fix else {})}


def _stream_labels(stream: str, n_offline: int, n_labelled: int, n_items: int) -> LabelledSample:
    """A stream's batch whose labels came in through the streams API: its items are a hash sample of the
    stream, but which of them got labels was up to whoever sent them."""
    some = f"{n_offline} of the {n_labelled}" if n_labelled > n_offline else "all"
    if n_labelled == n_items:
        return LabelledSample(
            NOT_RANDOM,
            f"every item of the batch (the traces the stream “{stream}” sampled) is labelled: the human mean is "
            "the batch's own mean, and there are no unlabelled items for the judge to add",
            f"nothing to fix; the stream's page (/streams/{stream}/) gives the judge's series per window",
            census=True,
        )
    return LabelledSample(
        NOT_RANDOM,
        f"{some} labelled items got their labels through the streams API (labels made elsewhere): the stream "
        f"“{stream}” sampled these traces at random, but which of them were labelled was up to the sender, "
        "so nothing says the labelled items are a random sample of this batch",
        "if every sampled trace of the stream gets its labels, or the traces sent for labelling were chosen "
        "at random, have an admin tick “Labels declared random” on the batch in the Django admin; the "
        f"stream's page (/streams/{stream}/) gives the judge's series per window",
    )


@dataclass(frozen=True)
class PrefixHoles:
    """Unlabelled items ranked before the last labelled one: how many, how many are excused."""

    n_holes: int
    n_leased: int  # holes on a live lease: being rated now
    n_skipped: int  # holes someone skipped: never excused

    @property
    def is_prefix(self) -> bool:
        return self.n_skipped == 0 and self.n_holes - self.n_leased <= WINDOW


def prefix_holes(
    rank: np.ndarray, labelled: np.ndarray, leased: np.ndarray, skipped: np.ndarray
) -> PrefixHoles:
    """The holes in the labelled prefix of the order ``rank`` (arrays over the same items).

    >>> import numpy as np
    >>> no = np.zeros(4, dtype=bool)
    >>> prefix_holes(np.array([3, 0, 2, 1]), np.array([False, True, False, True]), no, no).n_holes
    0
    >>> prefix_holes(np.array([3, 0, 2, 1]), np.array([True, True, False, False]), no, no).n_holes
    2
    """

    if not labelled.any():
        return PrefixHoles(0, 0, 0)
    last = rank[labelled].max()
    holes = ~labelled & (rank < last)
    return PrefixHoles(int(holes.sum()), int((holes & leased).sum()), int((holes & skipped & ~leased).sum()))


def labelled_sample(batch: Batch, arrays: ReportArrays, *, draw_in_force: bool) -> LabelledSample:
    """What the labelled items of the report's arrays (excluded annotators left out) are a sample of."""
    import numpy as np

    if draw_in_force:
        return LabelledSample(
            RECORDED_DRAW,
            "a review draw is in force: its labels were drawn with recorded probabilities π and are weighted by 1/π",
        )
    n = len(arrays.item_pk)
    labelled = np.zeros(n, dtype=bool)
    labelled[np.unique(arrays.annotation_item).astype(np.int64)] = True
    row_of = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    offline = (
        _rows(
            row_of,
            Item.objects.filter(batch=batch).filter(
                Exists(Annotation.objects.filter(item=OuterRef("pk"), source=Annotation.Source.IMPORT))
            ),
        )
        & labelled
    )
    if offline.any() and not batch.labels_declared_random:
        stream = stream_of_batch(batch_id=batch.pk)
        if stream is not None:
            return _stream_labels(stream, int(offline.sum()), int(labelled.sum()), n)
        return LabelledSample(
            NOT_RANDOM,
            # Of how many in the batch: labels given through the queue count too.
            (
                f"{int(offline.sum())} of the {int(labelled.sum())} labelled items "
                + ("was" if offline.sum() == 1 else "were")
                if labelled.sum() > offline.sum()
                else counted(int(offline.sum()), "labelled item was", "labelled items were")
            )
            + " imported from a file "
            "without --labelled-at-random, so nothing says the labelled set is a random sample of the batch",
            # A file already imported is refused as a whole (its rows are stored), so "import it again"
            # cannot be done: the declaration goes with the batch's next import, or an admin sets it.
            "if those items were drawn at random from the batch, say so with the batch's next import "
            "(import_annotations --labelled-at-random; the declaration covers every label imported "
            "before it, and a file already imported is refused, its rows being stored) or have an admin "
            f"tick “Labels declared random” on the batch in the Django admin; otherwise {draw_fix(batch)}",
        )
    queue = labelled & ~offline
    if queue.any() and _labelled_after_ranked_list(batch):
        return LabelledSample(
            NOT_RANDOM,
            "a ranked list (the items the judges disagree on most) was put first in the queue, and items were "
            "labelled through the queue after it: those items were chosen by the judges, not by the random order",
            draw_fix(batch),
        )
    if queue.any():
        verdict = _queue_order(batch, row_of, n, queue, offline)
        if verdict is not None:
            return verdict
    if offline.any():
        return LabelledSample(
            DECLARED_RANDOM,
            "the labels imported from a file were declared a random sample of the batch "
            "(import_annotations --labelled-at-random)"
            + ("; the ones given through the queue are a prefix of its random order" if queue.any() else ""),
        )
    return LabelledSample(
        RANDOM_ORDER if batch.order_seed is not None else NOT_RANDOM,
        f"the labels came through the queue, which hands items out in a random order (seed {batch.order_seed})"
        if batch.order_seed is not None
        else "the batch hands items out in file order",
    )


def _labelled_after_ranked_list(batch: Batch) -> bool:
    """Whether a queue label was given once a ranked list had been put first (``ranked_queue_first``): the
    prefix test cannot see it in a batch smaller than the lease's window, and the list may since be cleared."""
    if batch.ranked_first_at is None:
        return False
    return (
        Annotation.objects.filter(item__batch=batch, submitted_at__gte=batch.ranked_first_at)
        .exclude(source=Annotation.Source.IMPORT)
        .exists()
    )


def _rows(row_of: dict[int, int], items) -> np.ndarray:
    import numpy as np

    out = np.zeros(len(row_of), dtype=bool)
    for pk in items.values_list("pk", flat=True).iterator():
        row = row_of.get(pk)
        if row is not None:
            out[row] = True
    return out


def _queue_order(
    batch: Batch, row_of, n: int, queue: np.ndarray, offline: np.ndarray
) -> LabelledSample | None:
    """None when the labels given through the queue are a prefix of a random order; else why not."""
    import numpy as np

    if batch.order_seed is None:
        return LabelledSample(
            NOT_RANDOM,
            "the queue of this batch hands items out in file order (it was made before batches got a random "
            "order), so its labelled items are the first of the file, not a random sample",
            f"{draw_fix(batch)}, or upload the items again as a new batch, which gets a random order",
        )
    rank = np.zeros(n, dtype=np.int64)
    for pk, r in Item.objects.filter(batch=batch).values_list("pk", "queue_rank").iterator():
        row = row_of.get(pk)
        if row is not None:
            rank[row] = r
    now = timezone.now()
    leased = _rows(
        row_of,
        Item.objects.filter(batch=batch).filter(
            Exists(
                Assignment.objects.filter(
                    item=OuterRef("pk"), state=Assignment.State.LEASED, lease_expires_at__gt=now
                )
            )
        ),
    )
    skipped = _rows(
        row_of,
        Item.objects.filter(batch=batch).filter(
            Exists(Assignment.objects.filter(Q(state=Assignment.State.SKIPPED), item=OuterRef("pk")))
        ),
    )
    keep = ~offline  # offline labels are judged by their declaration, not by the queue's order
    holes = prefix_holes(rank[keep], queue[keep], leased[keep], skipped[keep])
    if holes.is_prefix:
        return None
    skipped_part = f", {holes.n_skipped} of them skipped" if holes.n_skipped else ""
    return LabelledSample(
        NOT_RANDOM,
        f"{counted(holes.n_holes, 'item', 'items')} the queue's random order (seed {batch.order_seed}) puts before "
        f"the last labelled one {'has' if holes.n_holes == 1 else 'have'} no label{skipped_part}, so the labelled "
        "items are not the prefix of the order the queue hands out (a ranked list put first, a retired draw, "
        "or items everyone skipped)",
        "label those items (the queue hands them out next unless everyone skipped them), or "
        + draw_fix(batch),
    )
