# Crowd entry: a platform session binds to one worker id; a study can end "full" for a worker.

from django.conf import settings
from django.db import migrations, models


def bind_first_sessions(apps, schema_editor):
    """Each Prolific worker's session id binds to them, the earliest arrival first; a session id an
    earlier worker already holds stays unbound for the later one (their row keeps it as it was).
    Other platforms' session ids may be shared by workers, so they bind nobody."""
    Enrolment = apps.get_model("annotator", "Enrolment")
    taken = set()
    rows = (Enrolment.objects.filter(platform="prolific").exclude(worker_id="").exclude(platform_session_id="")
            .order_by("started_at", "pk").values_list("pk", "batch_id", "platform", "platform_session_id"))
    for pk, batch_id, platform, session_id in rows.iterator():
        if (batch_id, platform, session_id) not in taken:
            taken.add((batch_id, platform, session_id))
            Enrolment.objects.filter(pk=pk).update(entry_session_id=session_id)


class Migration(migrations.Migration):

    dependencies = [
        ('annotator', '0017_assignment_batch'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='enrolment',
            name='entry_session_id',
            field=models.CharField(blank=True, default='', max_length=100),
        ),
        migrations.AlterField(
            model_name='enrolment',
            name='end',
            field=models.CharField(blank=True, choices=[('', 'Working'), ('done', 'Done'), ('timed_out', 'Timed out'), ('screened_out', 'Screened out'), ('declined', 'Declined consent'), ('full', 'Study full')], default='', max_length=20),
        ),
        migrations.RunPython(bind_first_sessions, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='enrolment',
            constraint=models.UniqueConstraint(condition=models.Q(('entry_session_id', ''), _negated=True), fields=('batch', 'platform', 'entry_session_id'), name='enrolment_one_worker_per_session'),
        ),
    ]
