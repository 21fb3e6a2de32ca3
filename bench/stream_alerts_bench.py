"""Alerts on a judged stream: detection delay, false alarms, and the product/judge classification.

    .venv/bin/python bench/stream_alerts_bench.py [--runs 1000] [--seed 0] [--reference 14]

A simulated stream (``hcs.streams.simulate``): 50 human-labelled traces a day, k = 3 raters each from a
pool of 12 with lasting leniencies, 90 days; the judge a noisy function of the traces' latent quality
with a QWK of 0.70 against the rounded human median. Scenarios, each over ``--runs`` runs:

* judge drift: the judge's noise rises on day 30 so its QWK falls to 0.55. Reported: the share of runs
  whose first judge_drift alarm comes on or after day 30, and the median delay (days of changed data
  seen, the change's first day counting 1) among them;
* no change: the share of runs with any judge_drift (or product_change, rater_drift) alarm in 90 days;
* product regression: the latent quality falls by 0.3 on day 30, the judge following it. Reported: the
  share of runs raising product_change (on or after day 30) and no judge_drift, and the median delay;
* rater drift: the rating noise rises from 0.6 to 0.9 on day 30: the share of runs raising rater_drift.

The detectors are ``hcs.streams.alerts.detect_changes`` with their defaults (α = 0.05 over a 90-window
horizon, a reference of ``--reference`` windows). Pure ``hcs``; not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hcs.streams.alerts import (  # noqa: E402
    detect_changes,
    item_agreement,
    item_level,
    item_rater_agreement,
)
from hcs.streams.simulate import StreamModel, judge_noise_for_qwk, qwk_of, simulate_window  # noqa: E402

DAYS, PER_DAY, K, CHANGE = 90, 50, 3, 30


def run(rng, scenario: str, noise_before: float, noise_after: float, reference: int, model: StreamModel):
    effects = rng.normal(0, model.rater_sd, model.raters)
    agreement, level, raters = [], [], []
    for day in range(DAYS):
        changed = day >= CHANGE
        human, judge = simulate_window(
            rng,
            PER_DAY,
            K,
            noise_after if changed and scenario == "judge" else noise_before,
            model=model,
            effects=effects,
            shift=-0.3 if changed and scenario == "product" else 0.0,
            rating_sd=0.9 if changed and scenario == "raters" else None,
        )
        agreement.append(item_agreement(judge, human, model.scale))
        level.append(item_level(human, model.scale))
        raters.append(item_rater_agreement(human, model.scale))
    options = dict(reference_windows=reference)
    return {
        "judge_drift": detect_changes(agreement, direction="down", **options),
        "product_change": detect_changes(level, direction="both", **options),
        "rater_drift": detect_changes(raters, direction="down", **options),
    }


def first_after(detections, day=CHANGE):
    times = [d.detected_at for d in detections if d.detected_at >= day]
    return times[0] if times else None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference", type=int, default=14, help="reference windows (days)")
    args = parser.parse_args(argv)
    model = StreamModel()
    noise_70, noise_55 = judge_noise_for_qwk(0.70, model=model), judge_noise_for_qwk(0.55, model=model)
    check = np.random.default_rng(99)
    # The QWK each noise gives (5,000 traces per rater pool, averaged over 40 pools)
    qwk_70 = np.mean([qwk_of(*simulate_window(check, 5000, K, noise_70, model=model)) for _ in range(40)])
    qwk_55 = np.mean([qwk_of(*simulate_window(check, 5000, K, noise_55, model=model)) for _ in range(40)])
    print(
        f"{DAYS} days × {PER_DAY} labelled traces, k = {K}; judge noise {noise_70:.3f} (QWK {qwk_70:.3f}) → "
        f"{noise_55:.3f} (QWK {qwk_55:.3f}); reference {args.reference} days; {args.runs} runs per scenario"
    )
    rng = np.random.default_rng(args.seed)
    rows = []
    started = time.perf_counter()
    for scenario in ("judge", "none", "product", "raters"):
        results = [run(rng, scenario, noise_70, noise_55, args.reference, model) for _ in range(args.runs)]
        if scenario == "none":
            for kind in ("judge_drift", "product_change", "rater_drift"):
                share = np.mean([len(r[kind]) > 0 for r in results])
                rows.append(
                    (
                        "no change",
                        f"runs with any false {kind}",
                        f"{share:.1%}",
                        "≤ 5%" if kind == "judge_drift" else "",
                    )
                )
            continue
        kind = {"judge": "judge_drift", "product": "product_change", "raters": "rater_drift"}[scenario]
        name = {
            "judge": "judge QWK 0.70 → 0.55",
            "product": "human mean −0.3",
            "raters": "rating noise 0.6 → 0.9",
        }[scenario]
        early = np.mean([any(d.detected_at < CHANGE for d in r[kind]) for r in results])
        hits = [first_after(r[kind]) for r in results]
        delays = np.array([h - CHANGE + 1 for h in hits if h is not None])
        since = [
            next(d.since for d in r[kind] if d.detected_at >= CHANGE)
            for r in results
            if first_after(r[kind]) is not None
        ]
        rows.append((name, f"runs raising {kind} by day {DAYS}", f"{len(delays) / len(results):.1%}", ""))
        if len(delays):
            target = "≤ 7" if scenario == "judge" else ""
            rows.append(
                (
                    name,
                    "median delay, days (IQR)",
                    f"{np.median(delays):.0f} ({np.percentile(delays, 25):.0f}–{np.percentile(delays, 75):.0f})",
                    target,
                )
            )
            rows.append(
                (name, "median |since − 30|, days", f"{np.median(np.abs(np.array(since) - CHANGE)):.0f}", "")
            )
        rows.append((name, f"runs with a {kind} before day {CHANGE}", f"{early:.1%}", ""))
        if scenario == "product":
            clean = np.mean(
                [first_after(r["product_change"]) is not None and not r["judge_drift"] for r in results]
            )
            rows.append((name, "product_change and no judge_drift", f"{clean:.1%}", "≥ 95%"))
        if scenario == "raters":
            judge = np.mean([len(r["judge_drift"]) > 0 for r in results])
            rows.append((name, "runs with a judge_drift", f"{judge:.1%}", ""))
    width = max(len(r[1]) for r in rows)
    print(f"\n{'scenario':<24} {'measure':<{width}}  {'value':>14}  target")
    for scenario, measure, value, target in rows:
        print(f"{scenario:<24} {measure:<{width}}  {value:>14}  {target}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
