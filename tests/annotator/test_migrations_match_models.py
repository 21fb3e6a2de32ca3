"""The models and the migrations agree: a change to a field's options (a help text, choices) that no
migration records would be picked up by the next ``makemigrations`` someone runs for another change."""

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_makemigrations_finds_nothing_to_do():
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # --check exits non-zero when a migration is missing
        pytest.fail(f"the models differ from the migrations (exit {exc.code}):\n{out.getvalue()}")
