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


def test_make_demo_keeps_the_address_it_serves_for_other_shells():
    result = subprocess.run(
        ["make", "-n", "demo", "PORT=8101"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "SITE_URL"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert 'echo "http://127.0.0.1:8101" > var/demo_site_url' in result.stdout


def study_link_output(**settings_) -> tuple[str, str]:
    from io import StringIO

    from django.core.management import call_command

    out, err = StringIO(), StringIO()
    with override_settings(**settings_):
        call_command(
            "study_link", DEMO_BATCH, "--quota", "3", "--completion-code", "C0DE", stdout=out, stderr=err
        )
    return out.getvalue().strip(), err.getvalue()


@pytest.mark.django_db
def test_study_link_from_another_shell_uses_the_port_make_demo_serves(tmp_path):
    """`make demo PORT=8160` runs in one shell; `manage.py study_link` in another has no SITE_URL."""
    import socket

    make_batch(DEMO_BATCH, n_items=2)
    address = tmp_path / "demo_site_url"
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 8160))
        server.listen()
        port = server.getsockname()[1]
        address.write_text(f"http://127.0.0.1:{port}\n")
        url, note = study_link_output(ANNOTATOR_SITE_URL_SET=False, ANNOTATOR_DEMO_ADDRESS_FILE=address)
    assert url.startswith(f"http://127.0.0.1:{port}/study/")
    assert "where `make demo` serves now" in note and "set SITE_URL" in note
    # The demo has stopped: nothing answers there, so the link says what to do instead of guessing.
    url, note = study_link_output(ANNOTATOR_SITE_URL_SET=False, ANNOTATOR_DEMO_ADDRESS_FILE=address)
    assert url.startswith("http://127.0.0.1:8000/study/")
    assert "SITE_URL is not set, so the link starts with the default http://127.0.0.1:8000" in note
    assert "set SITE_URL to that address" in note
    # A SITE_URL set wins, without a word.
    url, note = study_link_output(
        ANNOTATOR_SITE_URL_SET=True,
        ANNOTATOR_SITE_URL="https://eval.example.org",
        ANNOTATOR_DEMO_ADDRESS_FILE=address,
    )
    assert url.startswith("https://eval.example.org/study/") and "SITE_URL" not in note
