"""`make demo PORT=8101` prints study and invite links at the port it serves (or at SITE_URL when set),
and its "try it as a worker" link makes a new worker each time it is opened."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from annotator.management.commands.create_demo_users import demo_links
from annotator.management.commands.load_demo import DEMO_BATCH
from annotator.models import Enrolment
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
    assert len(urls) == 4 and all(url.startswith("http://127.0.0.1:8101/") for url in urls)


def printed_links() -> dict[str, str]:
    """The demo's printed links by what the line before each says."""
    lines = demo_links(make_user("admin"))
    return {
        lines[n - 1].strip(): line.strip().removeprefix("http://127.0.0.1:8000")
        for n, line in enumerate(lines)
        if line.strip().startswith("http")
    }


def try_it_link(links: dict[str, str]) -> str:
    return next(url for label, url in links.items() if label.startswith("try it as a worker"))


@pytest.mark.django_db
@override_settings(DEBUG=True, ANNOTATOR_SITE_URL="http://127.0.0.1:8000")
def test_the_printed_try_it_link_is_a_new_worker_each_time():
    """Opened twice (two private windows), the link gives two workers their own consent page; the
    session binding that refuses a second participant id in one Prolific session stays."""
    batch = make_batch(DEMO_BATCH, n_items=4)
    batch.consent_text = "You agree."
    batch.save()
    links = printed_links()
    link = try_it_link(links)
    pids = set()
    for _window in range(2):
        client = Client()
        entry = client.get(link)
        assert entry.status_code == 302, entry
        query = parse_qs(urlsplit(entry["Location"]).query)
        assert re.fullmatch(r"[0-9a-f]{24}", query["PROLIFIC_PID"][0]) and query["SESSION_ID"][0]
        consent = client.get(entry["Location"], follow=True)
        assert consent.status_code == 200 and consent.redirect_chain[-1][0].endswith(
            reverse("study_consent", args=[batch.pk])
        ), consent.redirect_chain
        pids.add(query["PROLIFIC_PID"][0])
    assert len(pids) == 2
    assert set(Enrolment.objects.filter(batch=batch).values_list("worker_id", flat=True)) == pids
    # The fixed link's session with another participant id is still refused.
    fixed = next(url for label, url in links.items() if label.startswith("or as one worker"))
    Client().get(fixed)
    other = fixed.replace("PROLIFIC_PID=5f0c1a2b3c4d5e6f7a8b9c0d", "PROLIFIC_PID=6a0c1a2b3c4d5e6f7a8b9c0d")
    assert Client().get(other).status_code == 403


@pytest.mark.django_db
def test_the_new_worker_link_is_only_in_a_debug_server():
    batch = make_batch(DEMO_BATCH, n_items=2)
    with override_settings(DEBUG=True, ANNOTATOR_SITE_URL="http://127.0.0.1:8000"):
        link = try_it_link(printed_links())
    assert Client().get(link).status_code == 404  # DEBUG off, as in production
    assert not Enrolment.objects.filter(batch=batch).exists()
    with override_settings(DEBUG=True):
        assert Client().get(reverse("study_new_worker", args=["no-such-token"])).status_code == 404


@pytest.mark.django_db
def test_the_printed_prolific_link_says_it_is_pasted_into_prolific():
    make_batch(DEMO_BATCH, n_items=2)
    lines = demo_links(make_user("admin"))
    template = next(n for n, line in enumerate(lines) if "{{%PROLIFIC_PID%}}" in line)
    assert "to paste into Prolific" in lines[template - 1] and "opens only from there" in lines[template - 1]
