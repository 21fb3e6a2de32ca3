"""Which judges exist and what they have scored, for the judge import page."""

from __future__ import annotations

from django.db.models import Count

from annotator.models import Judge


def judges_overview():
    return Judge.objects.annotate(
        n_scores=Count("scores", distinct=True),
        n_verdicts=Count("verdicts", distinct=True),
        n_failures=Count("failures", distinct=True),
        n_batches=Count("scores__item__batch", distinct=True),
    ).order_by("name")
