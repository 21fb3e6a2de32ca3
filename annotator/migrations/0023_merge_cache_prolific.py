from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0022_prolific_ledger"),
        ("annotator", "0022_report_cache"),
    ]
    operations = []
