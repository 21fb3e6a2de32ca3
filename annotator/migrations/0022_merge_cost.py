from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0021_merge_faults"),
        ("annotator", "0018_cost_response_cache"),
    ]
    operations = []
