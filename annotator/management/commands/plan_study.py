"""python manage.py plan_study BATCH --items N [--k K] [--json] [--target-width W] [--epsilon E]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import batch_named_or_numbered
from annotator.counted import counted
from hcs.calibration.alt_test import DEFAULT_EPSILON


class Command(BaseCommand):
    help = (
        "Use a batch as a pilot and predict, for N items x k annotators, the 95% CI width of Fleiss' kappa, "
        "Krippendorff's alpha (ordinal, interval), Gwet's AC2 per dimension and of the overall HCS mean; with "
        "--target-width, the items needed; per judge, the human labels for a PPI++ interval of that width and the "
        "items for the alt-test to pass with power 0.8."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name (or its numeric id)")
        parser.add_argument("--items", required=True, help="items in the planned study")
        parser.add_argument("--k", default=None, help="annotators per item (default: the batch's k)")
        parser.add_argument("--target-width", default=None, help="the 95%% CI width wanted, e.g. 0.1")
        parser.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON, help="the alt-test's margin")
        parser.add_argument("--json", action="store_true", help="print the plan as JSON")

    def handle(self, *args, batch, items, k, target_width, epsilon, json: bool, **options):
        from annotator.reports.selectors.batch_report import batch_report
        from annotator.studies.planning import PlanError, parse_plan_request, study_plan

        found = batch_named_or_numbered(batch)
        if not 0 <= epsilon < 1:
            raise CommandError(f"--epsilon must lie in [0, 1), not {epsilon}")
        try:
            n, kk, width = parse_plan_request(
                items=items, k=k if k is not None else found.k, target_width=target_width
            )
            arrays = batch_report(batch=found, n_resamples=0, with_sections=False).arrays
            plan = study_plan(batch=found, arrays=arrays, items=n, k=kk, target_width=width, epsilon=epsilon)
        except PlanError as exc:
            raise CommandError(str(exc)) from None
        if json:
            self.stdout.write(_dumps(plan.to_json()))
            return
        self.stdout.write(
            f"Plan for {counted(n, 'item', 'items')} x {counted(kk, 'annotator', 'annotators')} from batch {found.name!r} "
            f"({counted(plan.pilot_items, 'pilot item', 'pilot items')})"
        )
        for label, key, p in plan.rows():
            shown = "n/a" if p.predicted_ci95_width is None else f"{p.predicted_ci95_width:.4f}"
            need = "" if p.items_for_target is None else f"  items for width {width:g}: {p.items_for_target}"
            self.stdout.write(f"  {label:<24} {key:<28} CI width {shown}{need}")
        for name, j in plan.judges.items():
            line = f"  judge {name}: alt-test at eps {j.epsilon:g}, power 0.8: {j.alt_test_text()}"
            if width is not None:
                labels = ", ".join(f"{d} {text}" for d, text in j.ppi_label_texts())
                line += f"; human labels for a PPI++ CI of width {width:g}: {labels}"
            self.stdout.write(line)


def _dumps(data) -> str:
    return json.dumps(data, indent=2, allow_nan=False)
