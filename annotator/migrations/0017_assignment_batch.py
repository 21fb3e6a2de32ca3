"""Each assignment keeps its item's batch, so an annotator's work in one batch is one index range.

The column is added empty, filled from the items in one UPDATE, then made required; the
(annotator, state) index gives way to (annotator, batch, state), which serves the same lookups.
"""

import django.db.models.deletion
from django.db import migrations, models

FILL = (
    "UPDATE annotator_assignment SET batch_id = "
    "(SELECT i.batch_id FROM annotator_item i WHERE i.id = annotator_assignment.item_id)"
)


class Migration(migrations.Migration):

    dependencies = [
        ('annotator', '0016_score_item_without_constraint'),
    ]

    operations = [
        migrations.AddField(
            model_name='assignment',
            name='batch',
            field=models.ForeignKey(db_constraint=False, db_index=False, editable=False, null=True,
                                    on_delete=django.db.models.deletion.DO_NOTHING, related_name='+',
                                    to='annotator.batch'),
        ),
        migrations.RunSQL(FILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name='assignment',
            name='batch',
            field=models.ForeignKey(db_constraint=False, db_index=False, editable=False,
                                    on_delete=django.db.models.deletion.DO_NOTHING, related_name='+',
                                    to='annotator.batch'),
        ),
        migrations.RemoveIndex(
            model_name='assignment',
            name='assignment_annotator_state',
        ),
        migrations.AddIndex(
            model_name='assignment',
            index=models.Index(fields=['annotator', 'batch', 'state'], name='assignment_annotator_batch'),
        ),
    ]
