from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0019_merge_crowd_jdata"),
        ("annotator", "0018_jrun_judge_calls"),
    ]
    operations = []
