"""`make demo PORT=8101` prints study and invite links at the port it serves (or at SITE_URL when set)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from django.test import override_settings

from annotator.management.commands.create_demo_users import demo_links
from annotator.management.commands.load_demo import DEMO_BATCH
from tests.factories import make_batch, make_user

ROOT = Path(__file__).resolve().parents[3]


def demo_commands(*args: str, **env: str) -> list[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SITE_URL"} | env
    result = subprocess.run(
        ["make", "-n", "demo", *args], cwd=ROOT, env=environment, capture_output=True, text=True, check=True
    )
    return [line for line in result.stdout.splitlines() if "manage.py" in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(
    "args, env, site",
    [
        (["PORT=8101"], {}, "http://127.0.0.1:8101"),
        ([], {}, "http://127.0.0.1:8000"),
        (
            ["HOST=0.0.0.0", "PORT=8102"],
            {},
            "http://127.0.0.1:8102",
        ),  # every interface: links name this machine
        (["PORT=8101"], {"SITE_URL": "https://eval.example.org"}, "https://eval.example.org"),
    ],
)
def test_make_demo_gives_the_served_address_to_the_link_printing_and_the_server(args, env, site):
    commands = demo_commands(*args, **env)
    printing = next(c for c in commands if "create_demo_users" in c)
    serving = next(c for c in commands if "runserver" in c)
    assert f"SITE_URL={site} " in printing and f"SITE_URL={site} " in serving


@pytest.mark.django_db
@override_settings(ANNOTATOR_SITE_URL="http://127.0.0.1:8101")
def test_demo_links_start_with_the_site_url():
    make_batch(DEMO_BATCH, n_items=2)
    urls = [line.strip() for line in demo_links(make_user("admin")) if line.strip().startswith("http")]
    assert len(urls) == 3 and all(url.startswith("http://127.0.0.1:8101/") for url in urls)


@pytest.mark.django_db
def test_the_printed_prolific_link_says_it_is_pasted_into_prolific():
    make_batch(DEMO_BATCH, n_items=2)
    lines = demo_links(make_user("admin"))
    template = next(n for n, line in enumerate(lines) if "{{%PROLIFIC_PID%}}" in line)
    assert "to paste into Prolific" in lines[template - 1] and "opens only from there" in lines[template - 1]
