"""python manage.py import_verdicts FILE --batch NAME --judge NAME [--baseline-system SYSTEM]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import read_file, refused
from annotator.counted import counted
from annotator.judges.services.judges import pairwise_verdicts_import
from annotator.models import Batch
from annotator.uploads.files.errors import FileRefused, ImportRefused


class Command(BaseCommand):
    help = (
        "Import pairwise judge verdicts (prompt_id or baseline_item_id + enhanced_item_id, winner, confidence, "
        "or raw_output); saves nothing if any row is wrong."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--batch", required=True)
        parser.add_argument("--judge", required=True)
        parser.add_argument(
            "--baseline-system", default="", help="system id of the baseline, for rows named by prompt_id"
        )
        parser.add_argument("--model", default="")
        parser.add_argument("--template", default="")

    def handle(self, *args, file, batch, judge, baseline_system, model, template, **options):
        batch_obj = Batch.objects.filter(name=batch).first()
        if batch_obj is None:
            raise CommandError(f"--batch: there is no batch named \u201c{batch}\u201d.")
        data = read_file(file)
        try:
            count = pairwise_verdicts_import(
                batch=batch_obj,
                judge_name=judge,
                data=data,
                filename=file,
                baseline_system=baseline_system or None,
                model=model,
                template=template,
            )
        except (FileRefused, ImportRefused) as exc:
            raise refused(file, exc) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Judge \u201c{judge}\u201d: {counted(count, 'pairwise verdict', 'pairwise verdicts')} imported into \u201c{batch}\u201d."
            )
        )
