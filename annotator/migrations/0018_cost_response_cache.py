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
        migrations.AddField(
            model_name="judgecall",
            name="provider_batch",
            field=models.CharField(
                blank=True, default="", max_length=200,
                help_text="the provider's batch id while a --batch call waits in it: where a rerun fetches it from",
            ),
        ),
        migrations.AddIndex(
            model_name="judgecall",
            index=models.Index(fields=["request_key", "status"], name="judgecall_request_key"),
        ),
    ]
