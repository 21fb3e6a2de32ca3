from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0018_crowd_entry"),
        ("annotator", "0018_jdata_verdict_swapped"),
    ]
    operations = []
