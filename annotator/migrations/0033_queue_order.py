"""The queue's own order: a rank per item (a seeded random order for new batches, file order for the
batches already here, recorded as such by an empty seed) and a first tier for drawn items."""

from django.db import migrations, models


def ranks_follow_position(apps, schema_editor):
    # The batches already here keep the order their queue had: the position (which a ranked list or a
    # draw may have rewritten); their seed stays empty, which the report reads as "file order".
    Item = apps.get_model("annotator", "Item")
    Item.objects.update(queue_rank=models.F("position"))


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0032_judge_call_audit"),
    ]

    operations = [
        migrations.AddField(
            model_name="batch",
            name="order_seed",
            field=models.BigIntegerField(
                blank=True,
                help_text="Seed of the random order the queue hands items out in; empty: file order.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="batch",
            name="labels_declared_random",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="item",
            name="queue_rank",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="item",
            name="queue_first",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(ranks_follow_position, migrations.RunPython.noop, elidable=True),
        migrations.RemoveIndex(model_name="item", name="item_next_order"),
        migrations.AddIndex(
            model_name="item",
            index=models.Index(
                fields=["batch", "-queue_first", "-n_annotations", "-n_leased", "queue_rank"],
                name="item_next_order",
            ),
        ),
    ]
