from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):
    dependencies = [("annotator", "0010_quality_control")]

    operations = [
        migrations.AddField(
            model_name="judgecall",
            name="sample",
            field=models.PositiveSmallIntegerField(
                default=0, help_text="0 for the call whose scores the judge keeps; 1, 2, ... for the repeats of --samples"
            ),
        ),
        migrations.RemoveConstraint(model_name="judgecall", name="judgecall_one_per_item"),
        migrations.RemoveConstraint(model_name="judgecall", name="judgecall_one_per_pair"),
        migrations.AddConstraint(
            model_name="judgecall",
            constraint=models.UniqueConstraint(
                fields=["judge", "item", "sample"], condition=Q(enhanced__isnull=True), name="judgecall_one_per_item"
            ),
        ),
        migrations.AddConstraint(
            model_name="judgecall",
            constraint=models.UniqueConstraint(
                fields=["judge", "item", "enhanced", "sample"], condition=Q(enhanced__isnull=False),
                name="judgecall_one_per_pair",
            ),
        ),
        migrations.AlterModelOptions(name="judgecall", options={"ordering": ["judge", "item", "enhanced", "sample"]}),
    ]
