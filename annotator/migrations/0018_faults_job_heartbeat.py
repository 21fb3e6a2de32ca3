from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("annotator", "0017_assignment_batch"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="worker",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="job",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
