"""A batch worth publishing: several raters with varied scores and times, one excluded rater, a rater
with a unicode name, judge scores from a call and from a file, pairwise verdicts both ways round,
a gold item and an adjudication."""

from __future__ import annotations

import random
import zipfile
from datetime import timedelta
from io import BytesIO
from pathlib import Path

from django.utils import timezone

from annotator.models import (
    Adjudication,
    GoldItem,
    Judge,
    JudgeCall,
    JudgeCriterionScore,
    JudgeScore,
    PairwiseVerdict,
)
from annotator.quality.services.exclusion import annotator_exclude
from tests.factories import make_annotation, make_batch, make_user

UNICODE_NAME = "Zoë-𝔘𝔫𝔦𝔠𝔬𝔡𝔢-日本語-\u202eevil"


def study_batch(name: str = "Publish me ✓ — études", *, n_items: int = 12, n_raters: int = 5, seed: int = 7):
    rng = random.Random(seed)
    batch = make_batch(name, n_items=n_items, systems=("sys-a", "sys-b"))
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    raters = [make_user(f"rater{n}", role="annotator") for n in range(n_raters - 1)]
    raters.append(make_user(UNICODE_NAME, role="annotator"))
    start = timezone.now() - timedelta(days=1)
    items = list(batch.items.order_by("position"))
    t = 0
    for i, item in enumerate(items):
        for r, rater in enumerate(raters):
            if (i + r) % 7 == 6:
                continue  # not every rater rates every item: some items get fewer than k
            base = 1 + (i % 5)
            scores = {d: min(5, max(1, base + rng.choice((-1, 0, 0, 1)))) for d in dims}
            if (i * r) % 5 == 1:
                scores[dims[-1]] = None  # a dimension left unrated
            t += rng.choice((1, 1, 2))  # ties in time happen: imported rows share a timestamp
            flags = [rubric.flag_keys[0]] if rubric.flag_keys and (i + r) % 4 == 0 else []
            make_annotation(item, rater, scores, flags=flags, submitted_at=start + timedelta(seconds=t))
    annotator_exclude(batch=batch, annotator=raters[1], reason=f"{raters[1].username} answered at random")
    judge = Judge.objects.create(
        name="gpt-judge (template 2 #abcd1234)", model="gpt-x", template_hash="h" * 8
    )
    imported = Judge.objects.create(name="file-judge", model="m-file")
    for n, item in enumerate(items):
        JudgeScore.objects.create(
            judge=judge,
            item=item,
            dimension=dims[0],
            raw_value=1 + n % 5,
            scale_min=1,
            scale_max=5,
            value=1 + n % 5,
            reason="ok 👍",
        )
        JudgeScore.objects.create(
            judge=imported,
            item=item,
            dimension="overall",
            raw_value=(n % 10) / 10,
            scale_min=0,
            scale_max=1,
            value=1 + 4 * (n % 10) / 10,
            reason="",
        )
        JudgeCall.objects.create(
            judge=judge,
            item=item,
            status=JudgeCall.OK,
            template_name="t",
            template_hash="c" * 64,
            model="gpt-x-2026",
        )
    a, b, c, d = items[0], items[1], items[2], items[3]
    PairwiseVerdict.objects.create(judge=judge, baseline=a, enhanced=b, winner="enhanced", confidence=0.8)
    # the same pair sent the other way round (--swap): b shown first, and the judge named the first shown
    PairwiseVerdict.objects.create(
        judge=judge, baseline=b, enhanced=a, swapped=True, winner="baseline", confidence=0.6
    )
    PairwiseVerdict.objects.create(judge=judge, baseline=c, enhanced=d, winner="tie")
    JudgeCriterionScore.objects.create(
        judge=judge,
        item=a,
        enhanced=b,
        criterion="accuracy",
        rubric_dimension=dims[0],
        raw_value=4,
        scale_min=1,
        scale_max=5,
    )
    GoldItem.objects.create(
        batch=batch, item_id=items[5].item_id, kind="check", prompt="p", response="r", scores={dims[0]: 3}
    )
    researcher = make_user("adjudicator", role="researcher")
    Adjudication.objects.create(
        item=items[2], adjudicator=researcher, scores={d: 4 for d in dims}, note="agreed"
    )
    return batch, raters


def unzip(data: bytes, folder: Path) -> Path:
    with zipfile.ZipFile(BytesIO(data)) as archive:
        archive.extractall(folder)
    return folder
