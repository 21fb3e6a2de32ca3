"""python manage.py import_annotations FILE --batch NAME [--k K] [--rubric PATH] [--labelled-at-random]"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from annotator.cli import load_rubric, read_file, refused
from annotator.counted import counted
from annotator.models.batch import MIN_K
from annotator.uploads.files.errors import FileRefused, ImportRefused
from annotator.uploads.services.annotation_imports import annotations_import_file


class Command(BaseCommand):
    help = (
        "Import annotations made offline (templates/annotation_template.csv or JSONL with the same keys). "
        "Creates the batch, new items and new annotator accounts as needed; saves nothing if any row is wrong."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="CSV (UTF-8) or JSONL file of annotations")
        parser.add_argument("--batch", required=True, help="batch name; created if it does not exist")
        parser.add_argument(
            "--k", type=int, default=None, help=f"k for a new batch (default and least {MIN_K})"
        )
        parser.add_argument("--rubric", help="rubric JSON for a new batch (default: hcs/rubrics/hcs.json)")
        parser.add_argument(
            "--labelled-at-random",
            action="store_true",
            help="the file's items were drawn at random from the batch's items: the report may use them for "
            "PPI++ (ppi.sample declared_random). Without it, offline labels make the sample not_random.",
        )

    def handle(self, *args, file, batch, k, rubric, labelled_at_random=False, **options):
        data = read_file(file)
        rubric_obj = load_rubric(rubric)
        try:
            plan = annotations_import_file(
                data=data,
                filename=file,
                batch_name=batch,
                k=k,
                rubric=rubric_obj,
                labelled_at_random=labelled_at_random,
            )
        except (FileRefused, ImportRefused) as exc:
            raise refused(file, exc) from None
        made = "created" if plan.batch is None else "existing"
        self.stdout.write(
            self.style.SUCCESS(
                f"Batch \u201c{plan.batch_name}\u201d ({made}): "
                f"{counted(len(plan.parsed.annotations), 'annotation', 'annotations')} by "
                f"{counted(len(plan.parsed.annotators), 'annotator', 'annotators')}; "
                f"{counted(len(plan.new_items), 'new item', 'new items')}; "
                f"{counted(len(plan.new_users), 'new annotator account', 'new annotator accounts')}."
            )
        )
        self.stdout.write(
            "Declared a random sample of the batch (--labelled-at-random): the report uses these labels for PPI++."
            if labelled_at_random
            else "Not declared a random sample: the report gives no PPI++ estimate from these labels unless the "
            "file is imported with --labelled-at-random (docs/ppi.md)."
        )
        if plan.batch is not None and k is not None and k != plan.batch.k:
            self.stdout.write(f"The batch already existed, so its k stays {plan.batch.k}.")
