"""python manage.py create_demo_users: an admin, a researcher and five annotators with known passwords.

For demos and local development only. Idempotent: running it again resets the same accounts to
the same passwords and roles.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from annotator.roles import ANNOTATOR, RESEARCHER

DEMO_USERS = [
    ("admin", "admin"),
    ("researcher", RESEARCHER),
    *[(f"annotator{n}", ANNOTATOR) for n in range(1, 6)],
]


def demo_password(username: str) -> str:
    return f"{username}-demo-pass"


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
        self.stdout.write("Demo accounts (for local use only; change or delete them on a real server):")
        width = max(len(r[0]) for r in rows)
        for username, password, role, state in rows:
            self.stdout.write(f"  {username:<{width}}  password: {password:<26} role: {role:<10} ({state})")
