"""Judge calibration through the database: HANNA's ratings and its LLM judges, then the batch report.

    .venv/bin/python bench/judges_report_bench.py [--judges 4] [--resamples 1000]

Loads HANNA (1,056 stories × 3 rater slots × 6 criteria) into a fresh SQLite file with a six-criterion
rubric, imports each LLM judge's prompt-1 scores through ``judge_scores_import`` (the code path of the
judges page and ``import_judge_scores``), then times ``batch_report`` with and without the judges.
Printed: one row per step with its seconds. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

from bench_django import django_on_fresh_sqlite

ROOT = Path(__file__).resolve().parent.parent
HANNA = Path(__file__).resolve().parents[1] / "fixtures" / "hanna"
DB = Path("/tmp/judges_report_bench.sqlite3")
CODES = {
    "Relevance": "RE",
    "Coherence": "CH",
    "Empathy": "EM",
    "Surprise": "SU",
    "Engagement": "EG",
    "Complexity": "CX",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judges", type=int, default=4)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    django_on_fresh_sqlite(DB)
    import pandas as pd
    from django.core.management import call_command
    from django.utils import timezone

    from annotator.judges.services.judges import judge_scores_import
    from annotator.models import Annotation, Batch, Item, Score
    from annotator.reports.selectors import batch_report as reports
    from hcs.judge_output import JudgeScale
    from hcs.rubric import Rubric
    from tests.factories import make_user

    rows = []

    def step(name, started):
        rows.append((name, time.perf_counter() - started))

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    human = pd.read_csv(HANNA / "hanna_human_long.csv")
    wide = pd.read_csv(HANNA / "hanna_llm_scores_wide.csv")
    base = Rubric.default().to_dict()
    levels = base["dimensions"][0]["levels"]
    base["dimensions"] = [{"key": c.lower(), "label": c, "weight": 1 / 6, "levels": levels} for c in CODES]
    base["rules"], base["flags"], base["exclusive_flags"], base["name"] = [], [], [], "hanna"
    batch = Batch.objects.create(name="hanna", rubric=base, k=3)
    Item.objects.bulk_create(
        Item(
            batch=batch, item_id=str(s), position=i, prompt="(story prompt)", response="(story)", system_id=m
        )
        for i, (s, m) in enumerate(wide[["story_id", "model"]].itertuples(index=False))
    )
    items = dict(Item.objects.filter(batch=batch).values_list("item_id", "pk"))
    users = {slot: make_user(slot) for slot in sorted(human.rater.unique())}
    now = timezone.now()
    pairs = sorted({(str(s), r) for s, r in human[["story_id", "rater"]].itertuples(index=False)})
    Annotation.objects.bulk_create(
        Annotation(item_id=items[i], annotator=users[r], submitted_at=now, source="import") for i, r in pairs
    )
    ann = {
        (i, u): pk
        for pk, i, u in Annotation.objects.values_list("pk", "item__item_id", "annotator__username")
    }
    Score.objects.bulk_create(
        Score(annotation_id=ann[(str(s), r)], item_id=items[str(s)], dimension=c.lower(), value=v)
        for s, c, r, v in human[["story_id", "criterion", "rater", "score"]].itertuples(index=False)
    )
    step("load HANNA (3,168 annotations, 19,008 scores)", started)

    judges = sorted({c.rsplit(" ", 2)[0] for c in wide.columns if c.endswith(" RE 1")})[: args.judges]
    started = time.perf_counter()
    for judge in judges:
        out = io.StringIO()
        out.write("item_id,dimension,score\n")
        for criterion, code in CODES.items():
            for story, value in zip(wide.story_id, wide[f"{judge} {code} 1"]):
                out.write(f"{story},{criterion.lower()},{min(5.0, max(1.0, value))}\n")
        judge_scores_import(
            batch=batch,
            judge_name=judge,
            data=out.getvalue().encode(),
            filename="j.csv",
            scale=JudgeScale.parse("1-5"),
        )
    step(f"import {len(judges)} judges × 6 criteria × 1,056 scores", started)

    started = time.perf_counter()
    reports.report_from_arrays(
        batch=batch,
        arrays=reports.report_arrays(batch=batch),
        n_resamples=args.resamples,
        seed=reports.DEFAULT_SEED,
    )
    step("the report without the judge sections", started)
    started = time.perf_counter()
    report = reports.batch_report(batch=batch, n_resamples=args.resamples)
    step(f"batch_report with {len(report.sections['judges'].rows)} judge × criterion calibrations", started)

    width = max(len(name) for name, _ in rows)
    print(f"{'step':<{width}}  seconds")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:7.2f}")
    passed = sum(r.calibration.alt_test.passed for r in report.sections["judges"].rows)
    print(
        f"\nalt-test passed in {passed} of {len(report.sections['judges'].rows)} judge × criterion pairs (ε = 0.2)."
    )


if __name__ == "__main__":
    main()
