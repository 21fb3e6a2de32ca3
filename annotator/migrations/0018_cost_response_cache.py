from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0017_assignment_batch"),
    ]

    operations = [
        migrations.AddField(
            model_name="judgecall",
            name="request_key",
            field=models.CharField(
                blank=True, default="", max_length=64,
                help_text="sha256 of provider, base URL, request body and sample: the response cache's key",
            ),
        ),
        migrations.AddField(
            model_name="judgecall",
            name="cached",
            field=models.BooleanField(
                default=False, help_text="served from an identical earlier call: not paid for",
            ),
        ),
        migrations.AddIndex(
            model_name="judgecall",
            index=models.Index(fields=["request_key", "status"], name="judgecall_request_key"),
        ),
    ]
