"""A restored installation reports exactly what the original did: export_all → empty database →
import_all gives the same batch report, JSON export and CSV exports, judge sections included."""

import json
import random

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

import annotator.judges.selectors.judges  # noqa: F401  (registers the judge sections of the report)
from annotator.judges.exports.judges_csv import judges_csv
from annotator.judges.services.judges import judge_scores_import, pairwise_verdicts_import
from annotator.models import Annotation, Batch, Judge
from annotator.rating.services.annotations import annotation_update
from annotator.reports.exports import csv_tables as report_csv
from annotator.reports.exports.json_export import report_json
from annotator.reports.selectors.batch_report import batch_report
from hcs.judge_output import JudgeScale
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

DIMENSIONS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]


def _populate() -> Batch:
    rng = random.Random(6)
    people = [make_user(f"rater{i}") for i in range(4)]
    batch = make_batch("restored study", n_items=12, k=3, systems=("base", "enhanced"))
    for item in batch.items.order_by("position"):
        for person in people[: 3 + item.position % 2]:
            make_annotation(
                item,
                person,
                {d: rng.randint(1, 5) for d in DIMENSIONS},
                comment=f"=SUM(A1) <b>{item.item_id}</b>",
            )
    first = Annotation.objects.filter(item__batch=batch).order_by("pk").first()
    annotation_update(
        annotation=first,
        changed_by=first.annotator,
        scores={d: 2 for d in DIMENSIONS},
        flags=[],
        comment="changed my mind",
        constraints_met=[],
    )
    rows = ["item_id,dimension,score,reason"] + [
        f'{item_id},{d},{rng.random():.3f},"<script>alert(1)</script> {d}"'
        for item_id in batch.items.values_list("item_id", flat=True)
        for d in DIMENSIONS
    ]
    judge_scores_import(
        batch=batch,
        judge_name="gpt-judge",
        data="\n".join(rows).encode(),
        filename="s.csv",
        scale=JudgeScale.parse("0-1"),
        model="gpt-4o",
        template="hcs-v1",
    )
    verdicts = ["prompt_id,winner,confidence"] + [
        f"p{i},{rng.choice(['baseline', 'enhanced', 'tie'])},0.8" for i in range(6)
    ]
    pairwise_verdicts_import(
        batch=batch,
        judge_name="pairwise-judge",
        data="\n".join(verdicts).encode(),
        filename="v.csv",
        baseline_system="base",
    )
    return batch


def _everything_reported(batch: Batch) -> dict[str, str]:
    report = batch_report(batch=batch, n_resamples=200)
    return {
        "json": report_json(report),
        "dimensions.csv": "".join(report_csv.dimensions_csv(report)),
        "judges.csv": "".join(judges_csv(report)),
        "scores.csv": "".join(report_csv.scores_csv(batch=batch)),
        "annotations.csv": "".join(report_csv.annotations_csv(batch=batch)),
    }


def test_reports_after_a_restore_equal_the_reports_before(tmp_path):
    before = _everything_reported(_populate())
    data = json.loads(before["json"])
    # The report is not trivially empty: agreement figures and both judge sections are there.
    assert data["n_annotations"] == 12 * 3 + 6
    assert data["dimensions"]["coherence"]["krippendorff_alpha_ordinal"] is not None
    assert "gpt-judge" in before["json"] and "pairwise-judge" in before["json"]
    assert "gpt-judge" in before["judges.csv"]

    call_command("export_all", out=tmp_path)
    Batch.objects.all().delete()
    Judge.objects.all().delete()
    get_user_model().objects.all().delete()
    assert not Annotation.objects.exists()
    call_command("import_all", tmp_path)

    after = _everything_reported(Batch.objects.get(name="restored study"))
    for name in before:
        assert after[name] == before[name], f"{name} differs after the restore"


def test_submission_times_keep_their_microseconds(tmp_path):
    """Fleiss' kappa takes each item's first k ratings by submission time (then id). Times kept to
    the millisecond only (Django's JSON encoder) could tie and reorder them after a restore."""
    import datetime

    from django.utils import timezone

    batch = make_batch("first k", n_items=1, k=3)
    item = batch.items.get()
    t0 = timezone.now().replace(microsecond=0)
    people = [make_user(f"p{i}") for i in range(4)]
    # Ids in one order, submission times in another, all within the same millisecond.
    for person, micro, score in zip(people, [700, 800, 900, 100], [1, 1, 1, 5], strict=True):
        make_annotation(
            item,
            person,
            {d: score for d in DIMENSIONS},
            submitted_at=t0 + datetime.timedelta(microseconds=micro),
        )
    before = report_json(batch_report(batch=batch, n_resamples=50))
    times = sorted(Annotation.objects.values_list("submitted_at", flat=True))
    call_command("export_all", out=tmp_path)
    Batch.objects.all().delete()
    get_user_model().objects.all().delete()
    call_command("import_all", tmp_path)
    assert report_json(batch_report(batch=Batch.objects.get(name="first k"), n_resamples=50)) == before
    assert sorted(Annotation.objects.values_list("submitted_at", flat=True)) == times
