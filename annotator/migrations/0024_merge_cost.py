from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0022_merge_cost"),
        ("annotator", "0023_merge_cache_prolific"),
    ]
    operations = []
