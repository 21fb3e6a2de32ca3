from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0020_merge_jrun"),
        ("annotator", "0018_faults_job_heartbeat"),
    ]
    operations = []
