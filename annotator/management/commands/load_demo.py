"""python manage.py load_demo: the demo batch of route-planning items (with training and check items),
a few offline annotations, and three demo LLM judges' scores of the annotated items: two with made-up
scores (close and lenient) and a constructed one (``judge_scores.csv``: the rounded human mean, one point
more for answers over 250 characters and one less under 150, so its judge card shows a length bias),
and the stream "demo-support-chat" (``annotator.streams.demo``): 60 days of simulated traffic with a
product change and a judge drift, both raised as alerts on its page.

Idempotent: a second run finds the batch, its annotations, the judge's scores and the stream and changes
nothing.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.management.base import BaseCommand

from annotator.counted import counted
from annotator.judges.engine.templates import load_template
from annotator.judges.services.calibration_set import calibration_set_mark
from annotator.judges.services.judges import judge_scores_import
from annotator.judges.services.runs import version_key, version_name
from annotator.models import Annotation, Batch, CalibrationSet, Judge, JudgeScore
from annotator.streams.demo import demo_stream_load
from annotator.uploads.services.annotation_imports import annotations_import_file
from annotator.uploads.services.batches import batch_import_file
from hcs.judge_output import JudgeScale
from hcs.rubric import Rubric

DEMO_DIR = settings.BASE_DIR / "fixtures" / "demo"
DEMO_BATCH = "Demo: route planning"
DEMO_TEMPLATE = "hcs_rubric"  # the shipped template the demo judges' scores stand for
DEMO_JUDGES = {  # name: (file, model)
    "demo-judge-close": ("judge_close.csv", "demo (made-up scores)"),
    "demo-judge-lenient": ("judge_lenient.csv", "demo (made-up scores)"),
    "demo-judge (constructed)": ("judge_scores.csv", "constructed"),
}
# A second version of the lenient judge (the close scores, under another model): its card shows both
# versions side by side on the demo's calibration set. Named as run_judge names a version of a judge
# whose model changed: after the template's version and a hash of the template, model and parameters.
DEMO_VERSION_OF = ("demo-judge-lenient", "judge_close.csv", "demo v2 (made-up scores)")


def demo_judges() -> dict[str, tuple[str, str]]:
    """Every demo judge by name: (file, model), the second version of the lenient judge included."""
    template = load_template(DEMO_TEMPLATE)
    name, filename, model = DEMO_VERSION_OF
    versioned = version_name(name, template.version, version_key(template, model, {}))
    return {**DEMO_JUDGES, versioned: (filename, model)}


class Command(BaseCommand):
    help = (
        "Load the demo batch (fixtures/demo/items.jsonl, with the training and check items of gold.jsonl) "
        "and its offline annotations (annotations.csv), and the demo stream of simulated traffic."
    )

    def handle(self, *args, **options):
        items = DEMO_DIR / "items.jsonl"
        gold = DEMO_DIR / "gold.jsonl"  # training items and gold checks, in the same file format
        batch = Batch.objects.filter(name=DEMO_BATCH).first()
        if batch is None:
            batch = batch_import_file(
                data=items.read_bytes() + gold.read_bytes(),
                filename=items.name,
                name=DEMO_BATCH,
                k=3,
                rubric=Rubric.default(),
            )
            self.stdout.write(
                f"Created batch \u201c{DEMO_BATCH}\u201d with {counted(batch.items.count(), 'item', 'items')}, "
                f"{batch.gold_items.filter(kind='training').count()} training items every annotator does first "
                f"and {batch.gold_items.filter(kind='check').count()} gold checks mixed into the queue."
            )
        else:
            self.stdout.write(
                f"Batch \u201c{DEMO_BATCH}\u201d already exists ({counted(batch.items.count(), 'item', 'items')})."
            )
        if not batch.consent_text:
            batch.consent_text = (DEMO_DIR / "consent.md").read_text(encoding="utf-8")
            batch.save(update_fields=["consent_text"])
            self.stdout.write(
                "Gave it a consent text (fixtures/demo/consent.md), shown before the first item."
            )
        if Annotation.objects.filter(item__batch=batch, source=Annotation.Source.IMPORT).exists():
            self.stdout.write("Its offline annotations are already loaded.")
        else:
            annotations = DEMO_DIR / "annotations.csv"
            plan = annotations_import_file(
                data=annotations.read_bytes(), filename=annotations.name, batch_name=DEMO_BATCH
            )
            self.stdout.write(
                f"Imported {len(plan.parsed.annotations)} offline annotations by {', '.join(plan.parsed.annotators)} "
                f"on {counted(len(plan.existing_items), 'item', 'items')}; the other items are waiting to be rated."
            )
        self._judges(batch)
        self._calibration_set(batch)
        for line in demo_stream_load(site_url=settings.ANNOTATOR_SITE_URL):
            self.stdout.write(line)

    def _judges(self, batch: Batch) -> None:
        template = load_template(DEMO_TEMPLATE)
        judges = demo_judges()
        # A demo loaded before named the second version after its score file: renamed, not loaded twice.
        name, filename, _model = DEMO_VERSION_OF
        earlier = f"{name} (template 2 #{hashlib.sha256((DEMO_DIR / filename).read_bytes()).hexdigest()[:8]})"
        [current] = [judge for judge in judges if judge not in DEMO_JUDGES]
        if not Judge.objects.filter(name=current).exists():
            Judge.objects.filter(name=earlier).update(name=current)
        for judge, (filename, model) in judges.items():
            if not JudgeScore.objects.filter(judge__name=judge, item__batch=batch).exists():
                path = DEMO_DIR / filename
                n = judge_scores_import(
                    batch=batch,
                    judge_name=judge,
                    data=path.read_bytes(),
                    filename=path.name,
                    scale=JudgeScale(1, 5),
                    model=model,
                    template=template.name,
                    template_version=template.version,
                )
                self.stdout.write(
                    f"Imported {n} scores of the demo judge \u201c{judge}\u201d (see its judge card)."
                )
            # The template's hash too, as a run records it, so every demo judge's exported rows and card
            # name the template they stand for (also a judge a demo loaded before this was recorded).
            Judge.objects.filter(
                name=judge, template=template.name, template_version__in=["", template.version]
            ).filter(template_hash="").update(
                template_version=template.version, template_hash=template.content_hash
            )

    def _calibration_set(self, batch: Batch) -> None:
        if CalibrationSet.objects.filter(batch=batch).exists():
            return
        rated = Annotation.objects.filter(item__batch=batch, source=Annotation.Source.IMPORT)
        ids = sorted(set(rated.values_list("item__item_id", flat=True)))
        calibration_set_mark(batch=batch, item_ids=ids, note="Demo: the items with offline annotations.")
        self.stdout.write(
            f"Froze a calibration set of {counted(len(ids), 'item', 'items')}: the judge card of \u201cdemo-judge-lenient\u201d "
            "compares its two versions on it."
        )
