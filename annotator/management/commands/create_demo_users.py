"""python manage.py create_demo_users: an admin, a researcher and five annotators with known passwords.

For demos and local development only. Idempotent: running it again resets the same accounts to
the same passwords and roles.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from annotator.management.commands.load_demo import DEMO_BATCH
from annotator.models import Batch, InviteLink, StudyLink
from annotator.roles import ANNOTATOR, RESEARCHER
from annotator.studies.link_urls import invite_url, new_worker_url, study_url
from annotator.studies.services.links import invite_create, link_revoke, study_link_create

DEMO_USERS = [
    ("admin", "admin"),
    ("researcher", RESEARCHER),
    *[(f"annotator{n}", ANNOTATOR) for n in range(1, 6)],
]


DEMO_COMPLETION_CODE = "DEMO-DONE"
DEMO_WORKER = {
    "PROLIFIC_PID": "5f0c1a2b3c4d5e6f7a8b9c0d",
    "STUDY_ID": "demo-study",
    "SESSION_ID": "demo-session-1",
}


def demo_password(username: str) -> str:
    return f"{username}-demo-pass"


def demo_links(admin) -> list[str]:
    """A Prolific study link and an invite link for the demo batch (earlier demo links revoked)."""
    batch = Batch.objects.filter(name=DEMO_BATCH).first()
    if batch is None:
        return ["(no demo batch: run `manage.py load_demo` first for a study link and an invite link)"]
    for old in StudyLink.objects.filter(
        batch=batch, completion_code=DEMO_COMPLETION_CODE, revoked_at__isnull=True
    ):
        link_revoke(link=old)
    for old in InviteLink.objects.filter(batches=batch, created_by=admin, revoked_at__isnull=True):
        link_revoke(link=old)
    study, study_token = study_link_create(
        batch=batch,
        platform="prolific",
        quota=3,
        completion_code=DEMO_COMPLETION_CODE,
        screen_out_code="DEMO-SCREENED",
        no_consent_code="DEMO-NOCONSENT",
        days=7,
        created_by=admin,
    )
    _invite, invite_token = invite_create(batches=[batch], uses=5, days=7, created_by=admin)
    template = study_url(study_token, study.platform)
    one_worker = template.split("?")[0] + "?" + "&".join(f"{k}={v}" for k, v in DEMO_WORKER.items())
    return [
        f"Prolific study link for \u201c{DEMO_BATCH}\u201d (quota 3, code {DEMO_COMPLETION_CODE}):",
        "  to paste into Prolific, which fills in each participant's id; it opens only from there:",
        f"  {template}",
        "  try it as a worker (each visit is a new worker, with a new PROLIFIC_PID and SESSION_ID; use a private window):",
        f"  {new_worker_url(study_token)}",
        "  or as one worker who can come back (another worker needs a new PROLIFIC_PID of 24 hex digits"
        " and a new SESSION_ID: a Prolific session belongs to one participant):",
        f"  {one_worker}",
        "Invite link (up to 5 accounts, 7 days):",
        f"  {invite_url(invite_token)}",
    ]


class Command(BaseCommand):
    help = "Create (or reset) the demo accounts and print their credentials."

    @transaction.atomic
    def handle(self, *args, **options):
        User = get_user_model()
        rows = []
        for username, role in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username)
            user.is_staff = user.is_superuser = role == "admin"
            user.set_password(demo_password(username))
            user.save()
            if role in (ANNOTATOR, RESEARCHER):
                user.groups.add(Group.objects.get_or_create(name=role)[0])
            rows.append((username, demo_password(username), role, "created" if created else "reset"))
            if role == "admin":
                admin = user
        self.stdout.write("Demo accounts (for local use only; change or delete them on a real server):")
        width = max(len(r[0]) for r in rows)
        for username, password, role, state in rows:
            self.stdout.write(f"  {username:<{width}}  password: {password:<26} role: {role:<10} ({state})")
        for line in demo_links(admin):
            self.stdout.write(line)
