"""python manage.py import_judge_scores FILE --batch NAME --judge NAME --scale 0-1|1-4|1-5 [--lower-is-better]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import read_file, refused
from annotator.counted import counted
from annotator.judges.services.judges import judge_scores_import
from annotator.models import Batch
from annotator.uploads.files.errors import FileRefused, ImportRefused
from hcs.judge_output import JudgeScale, OutputSpec, parse_labels


class Command(BaseCommand):
    help = (
        "Import LLM-judge scores (CSV or JSONL: item_id, dimension, score or raw_output, optional reason) "
        "into a batch; saves nothing if any row is wrong."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--batch", required=True, help="name of the batch the items belong to")
        parser.add_argument("--judge", required=True, help="judge name (created on first use)")
        parser.add_argument(
            "--scale", required=True, help="the judge's raw scale: 0-1, 1-4, 1-5 (any low-high)"
        )
        parser.add_argument("--lower-is-better", action="store_true", help="low raw scores are the good end")
        parser.add_argument("--model", default="", help="the model behind the judge")
        parser.add_argument("--template", default="", help="the prompt template's name")
        parser.add_argument("--template-version", default="", help="the prompt template's version")
        parser.add_argument(
            "--verdict-key", default=None, help="the key holding the score in raw_output, e.g. answer_match"
        )
        parser.add_argument("--reason-key", default=None, help="the key holding the reason in raw_output")
        parser.add_argument(
            "--own-criteria",
            action="store_true",
            help="keep dimensions that are not rubric dimensions as the judge's own criteria",
        )
        parser.add_argument(
            "--criteria-map",
            default="",
            help="with --own-criteria: criterion=rubric dimension pairs, e.g. 'clarity=fluency'",
        )
        parser.add_argument(
            "--labels",
            default="",
            help="verdict labels as numbers: 'Excellent=4, Very Good=3, Good=2, Bad=1'",
        )

    def handle(
        self, *args, file, batch, judge, scale, lower_is_better, model, template, template_version, **options
    ):
        try:
            judge_scale = JudgeScale.parse(scale, higher_is_better=not lower_is_better)
        except ValueError as exc:
            raise CommandError(f"--scale: {exc}") from None
        try:
            labels = parse_labels(options.get("labels", ""))
        except ValueError as exc:
            raise CommandError(f"--labels: {exc}") from None
        criteria = None
        if options.get("own_criteria") or options.get("criteria_map"):
            pairs = [p.partition("=") for p in options.get("criteria_map", "").split(",") if p.strip()]
            if any(not sep for _, sep, _ in pairs):
                raise CommandError("--criteria-map: give criterion=dimension pairs separated by commas.")
            criteria = {k.strip().lower(): v.strip().lower() for k, _, v in pairs}
        output = OutputSpec(
            scale=judge_scale,
            verdict_key=options.get("verdict_key"),
            reason_key=options.get("reason_key"),
            labels=labels,
        )
        batch_obj = Batch.objects.filter(name=batch).first()
        if batch_obj is None:
            raise CommandError(f"--batch: there is no batch named \u201c{batch}\u201d.")
        data = read_file(file)
        try:
            count = judge_scores_import(
                batch=batch_obj,
                judge_name=judge,
                data=data,
                filename=file,
                scale=judge_scale,
                model=model,
                template=template,
                template_version=template_version,
                output=output,
                criteria=criteria,
            )
        except (FileRefused, ImportRefused) as exc:
            raise refused(file, exc) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Judge \u201c{judge}\u201d: {counted(count, 'score', 'scores')} on {judge_scale.label} imported into \u201c{batch}\u201d."
            )
        )
