"""Annotations and their scores, stored long: one Score row per annotation × dimension."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.batch import Item

# The one scale scores are stored on (the database check below). A rubric on another scale is
# refused when a batch is made (annotator.uploads.files.checks.rubric_errors).
SCORE_MIN, SCORE_MAX = 1, 5


class Annotation(models.Model):
    class Source(models.TextChoices):
        WEB = "web", "Rated in the browser"
        IMPORT = "import", "Imported from a file"

    # db_index=False on foreign keys that lead a composite index below: one b-tree less to
    # update per row written (the rating submit and bulk imports), the same lookups served.
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="annotations", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotations", db_index=False
    )
    flags = models.JSONField(default=list, blank=True, help_text="Keys of the rubric flags set.")
    comment = models.TextField(blank=True, default="")
    # One boolean per entry of item.constraints: the annotator's hard-constraint checklist.
    # Empty when the item lists no constraints or the annotation was imported.
    constraints_met = models.JSONField(default=list, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.WEB)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # Submission order; imported rows share a timestamp and keep file order by id.
        ordering = ["submitted_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="annotation_one_per_item_annotator"),
        ]
        indexes = [
            models.Index(fields=["annotator", "submitted_at"], name="annotation_annotator_time"),
            # Submission order: a page of a batch's annotations (the API's cursor) starts from the index.
            models.Index(fields=["submitted_at", "id"], name="annotation_submission_order"),
        ]

    def __str__(self) -> str:
        return f"{self.item} by {self.annotator}"

    @property
    def seconds_on_item(self) -> float | None:
        if self.started_at is None:
            return None
        return (self.submitted_at - self.started_at).total_seconds()


class Score(models.Model):
    # No database constraint, as on item below: scores are only written beside their annotation, in
    # the same transaction (the rating submit, the import with the ids it reserved), and checking
    # five score rows per annotation was most of what PostgreSQL spent committing an annotation
    # import. Deleting an annotation, an item or a batch still deletes the scores (the ORM's cascade;
    # tests/annotator/test_cascade_without_constraints.py).
    annotation = models.ForeignKey(
        Annotation, on_delete=models.CASCADE, related_name="scores", db_index=False, db_constraint=False
    )
    # Denormalised from annotation.item (never changes) so report aggregates skip a join. No
    # database constraint: the annotation's own keeps the item. Deleting an item still deletes its
    # scores (the ORM's cascade).
    item = models.ForeignKey(
        Item, on_delete=models.CASCADE, related_name="scores", db_index=False, db_constraint=False
    )
    dimension = models.CharField(max_length=64)
    value = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotation", "dimension"], name="score_one_per_dimension"),
            models.CheckConstraint(
                condition=models.Q(value__gte=SCORE_MIN) & models.Q(value__lte=SCORE_MAX),
                name="score_value_1_to_5",
            ),
        ]
        indexes = [
            models.Index(fields=["item", "dimension", "value"], name="score_item_dim_value"),
        ]

    def __str__(self) -> str:
        return f"{self.dimension}={self.value}"


class AnnotationRevision(models.Model):
    """The state of an annotation before one edit: who changed it, when, and the old values."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="revisions")
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    changed_at = models.DateTimeField(auto_now_add=True)
    old_scores = models.JSONField(default=dict)
    old_flags = models.JSONField(default=list)
    old_comment = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["annotation", "changed_at", "id"]
