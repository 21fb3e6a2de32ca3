"""Who was given which item: leases, submissions and skips."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.batch import Batch, Item


class Assignment(models.Model):
    """One annotator's claim on one item. An item is never given to the same annotator twice."""

    class State(models.TextChoices):
        LEASED = "leased", "Leased"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"
        EXPIRED = "expired", "Expired"
        RELEASED = "released", "Released by an admin"

    # No single-column indexes on the foreign keys: the unique (item, annotator) and the
    # (annotator, batch, state) indexes below lead with them.
    # No database constraints on item and annotator either: checking each (item, annotator) pair
    # again was a large share of an annotation import's COMMIT on PostgreSQL, where the same pairs'
    # annotations are checked in the same transaction. The writers hold both rows while they write
    # (a lease updates the item and key-share locks the annotator first), and the ORM's cascades
    # delete the assignments of a deleted item, batch or user (tests/annotator/
    # test_cascade_without_constraints.py). What only the constraint caught: a lease committed
    # while its item or user was being deleted now leaves an inert row that points at nothing.
    item = models.ForeignKey(
        Item, on_delete=models.CASCADE, related_name="assignments", db_index=False, db_constraint=False
    )
    # The item's batch, kept here so an annotator's work in one batch is one index range, not all
    # their work in every batch joined to the items (the rating page counts it on every item).
    # No database constraint and no cascade of its own: the item's key already keeps the batch,
    # and deleting a batch deletes its items and with them their assignments. Never set on its own
    # (not editable, so not in the admin's form): the lease and the import write the item's, and
    # save() takes the item's for a row the ORM adds without it.
    batch = models.ForeignKey(
        Batch,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_index=False,
        db_constraint=False,
        editable=False,
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="assignments",
        db_index=False,
        db_constraint=False,
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.LEASED)
    leased_at = models.DateTimeField()
    lease_expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    skip_reason = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="assignment_once_per_item_annotator"),
        ]
        indexes = [
            models.Index(fields=["state", "lease_expires_at"], name="assignment_state_expiry"),
            models.Index(fields=["annotator", "batch", "state"], name="assignment_annotator_batch"),
        ]

    def save(self, *args, **kwargs):
        if self.batch_id is None and self.item_id is not None:
            self.batch_id = Item.objects.values_list("batch_id", flat=True).get(pk=self.item_id)
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return f"{self.item} → {self.annotator} ({self.state})"
