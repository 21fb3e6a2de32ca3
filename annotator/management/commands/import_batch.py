"""python manage.py import_batch FILE --name NAME [--k 3] [--rubric PATH]"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from annotator.cli import load_rubric, read_file, refused
from annotator.counted import counted
from annotator.models.batch import MIN_K
from annotator.uploads.files.errors import FileRefused, ImportRefused
from annotator.uploads.services.batches import batch_import_file
from hcs.rubric import Rubric


class Command(BaseCommand):
    help = "Create a batch from a CSV or JSONL file of items; saves nothing if any row is wrong."

    def add_arguments(self, parser):
        parser.add_argument("file", help="CSV (UTF-8) or JSONL file of items")
        parser.add_argument("--name", required=True, help="name of the new batch (must not exist yet)")
        parser.add_argument(
            "--k", type=int, default=MIN_K, help=f"annotations each item receives (at least {MIN_K})"
        )
        parser.add_argument("--rubric", help="rubric JSON file (default: hcs/rubrics/hcs.json)")

    def handle(self, *args, file, name, k, rubric, **options):
        data = read_file(file)
        rubric_obj = load_rubric(rubric) or Rubric.default()
        try:
            batch = batch_import_file(
                data=data,
                filename=file,
                name=name,
                k=k,
                rubric=rubric_obj,
            )
        except (FileRefused, ImportRefused) as exc:
            raise refused(file, exc) from None
        count = batch.items.count()
        self.stdout.write(
            self.style.SUCCESS(
                f"Batch \u201c{batch.name}\u201d: {counted(count, 'item', 'items')}, k = {batch.k}."
            )
        )
