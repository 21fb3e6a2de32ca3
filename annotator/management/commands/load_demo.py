"""python manage.py load_demo: the demo batch of route-planning items and a few offline annotations.

Idempotent: a second run finds the batch and its annotations and changes nothing.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from annotator.models import Annotation, Batch
from annotator.services.annotation_imports import annotations_import_file
from annotator.services.batches import batch_import_file
from hcs.rubric import Rubric

DEMO_DIR = settings.BASE_DIR / "fixtures" / "demo"
DEMO_BATCH = "Demo: route planning"


class Command(BaseCommand):
    help = "Load the demo batch (fixtures/demo/items.jsonl) and its offline annotations (annotations.csv)."

    def handle(self, *args, **options):
        items = DEMO_DIR / "items.jsonl"
        batch = Batch.objects.filter(name=DEMO_BATCH).first()
        if batch is None:
            batch = batch_import_file(
                data=items.read_bytes(), filename=items.name, name=DEMO_BATCH, k=3, rubric=Rubric.default()
            )
            self.stdout.write(f"Created batch \u201c{DEMO_BATCH}\u201d with {batch.items.count()} items.")
        else:
            self.stdout.write(f"Batch \u201c{DEMO_BATCH}\u201d already exists ({batch.items.count()} items).")
        if Annotation.objects.filter(item__batch=batch, source=Annotation.Source.IMPORT).exists():
            self.stdout.write("Its offline annotations are already loaded.")
            return
        annotations = DEMO_DIR / "annotations.csv"
        plan = annotations_import_file(data=annotations.read_bytes(), filename=annotations.name, batch_name=DEMO_BATCH)
        self.stdout.write(
            f"Imported {len(plan.parsed.annotations)} offline annotations by {', '.join(plan.parsed.annotators)} "
            f"on {len(plan.existing_items)} items; the other items are waiting to be rated."
        )
