"""What a recorded review draw costs: making it, and the judges' report section with it in force.

    .venv/bin/python bench/review_draw_bench.py [--items 5000] [--labelled 200] [--budget 200] [--reps 5]

A fresh SQLite file: ``--items`` items, two judges (one on every dimension, one on coherence, disagreeing
by 0 to 2 points so the uncertainty varies), the first ``--labelled`` items rated by three people. Times
the ranked list (``review_candidates``), one draw (``review_draw_make``: candidates, π, the record, the
queue) and ``judges_report`` (calibration and PPI, 200 resamples) with and without the draw in force,
interleaved, ``--reps`` times each; prints medians and the ratio. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from bench_django import django_on_fresh_sqlite

DB = Path(os.environ.get("REVIEW_DRAW_BENCH_DB", "/tmp/review_draw_bench.sqlite3"))
DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--labelled", type=int, default=200)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    django_on_fresh_sqlite(DB)
    import numpy as np
    from django.core.management import call_command
    from django.utils import timezone

    from annotator.judges.selectors.judges import judges_report
    from annotator.judges.selectors.review import review_candidates
    from annotator.judges.services.review import review_draw_make, review_draw_retire
    from annotator.models import Annotation, Judge, JudgeScore, Score
    from annotator.reports.selectors.batch_report import report_arrays
    from tests.factories import make_batch, make_user

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(0)
    batch = make_batch("bench", n_items=args.items, systems=("a", "b", "c"), constraints=())
    items = list(batch.items.order_by("position"))
    quality = rng.integers(1, 6, size=len(items))
    full, coherent = Judge.objects.create(name="full"), Judge.objects.create(name="coherence")
    scores = []
    for item, q in zip(items, quality):
        for d in DIMS:
            v = float(np.clip(q + rng.normal(0, 0.7), 1, 5))
            scores.append(
                JudgeScore(judge=full, item=item, dimension=d, raw_value=v, scale_min=1, scale_max=5, value=v)
            )
        v = float(np.clip(q + rng.choice([0, 0.5, 1, 2]), 1, 5))
        scores.append(
            JudgeScore(
                judge=coherent,
                item=item,
                dimension="coherence",
                raw_value=v,
                scale_min=1,
                scale_max=5,
                value=v,
            )
        )
    JudgeScore.objects.bulk_create(scores, batch_size=5000)
    people = [make_user(f"p{n}") for n in range(3)]
    now = timezone.now()
    for item, q in zip(items[: args.labelled], quality):
        for person in people:
            a = Annotation.objects.create(
                item=item, annotator=person, submitted_at=now, source=Annotation.Source.IMPORT
            )
            Score.objects.bulk_create(Score(annotation=a, item=item, dimension=d, value=int(q)) for d in DIMS)

    def timed(fn, **kwargs):
        started = time.perf_counter()
        fn(**kwargs)
        return time.perf_counter() - started

    listing, draws, without, with_draw = [], [], [], []
    arrays = report_arrays(batch=batch)  # the draw moves items in the queue, not the annotations
    judges_report(batch=batch, arrays=arrays, n_boot=200)  # warm-up: imports and first queries are not timed
    for rep in range(args.reps):  # the order of the two report timings alternates
        listing.append(timed(review_candidates, batch=batch, n=50))
        if rep % 2:
            without.append(timed(judges_report, batch=batch, arrays=arrays, n_boot=200))
        draws.append(timed(review_draw_make, batch=batch, budget=args.budget, seed=rep))
        with_draw.append(timed(judges_report, batch=batch, arrays=arrays, n_boot=200))
        review_draw_retire(batch=batch)
        if not rep % 2:
            without.append(timed(judges_report, batch=batch, arrays=arrays, n_boot=200))
    print(
        f"{args.items} items, {args.labelled} labelled, budget {args.budget}, {args.reps} reps, load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'step':<44} {'median s':>9} {'min s':>8} {'max s':>8}")
    for name, values in (
        ("review_candidates (ranked list, n = 50)", listing),
        ("review_draw_make (record + queue)", draws),
        ("judges_report, no draw (PPI++)", without),
        ("judges_report, draw in force (weighted)", with_draw),
    ):
        print(f"{name:<44} {statistics.median(values):>9.3f} {min(values):>8.3f} {max(values):>8.3f}")
    ratios = [w / o for w, o in zip(with_draw, without)]
    print(f"judges_report with / without the draw, median of paired ratios: ×{statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
