"""A worker's platform ids (``PROLIFIC_PID``, ``SESSION_ID``) arrive in the study link's query
string; they stay in the app. The served access log (gunicorn, as ``make web`` starts it) writes
paths without query strings or referers, and every page the way in answers sends no Referer on."""

from __future__ import annotations

import io
import logging
import shlex
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from tests.annotator.study_support import PID_A, entry_url, prolific_link, rate_next, start
from tests.factories import make_annotation, make_batch, make_user

ROOT = Path(__file__).resolve().parents[3]
SESSION = "6500aa00bb11cc22dd33ee99"
SCORES = {"coherence": 4, "relevance": 4, "instruction_following": 4, "safety_compliance": 5, "fluency": 5}


def served_gunicorn_args() -> list[str]:
    """The gunicorn command line ``make web`` runs (``make -n`` prints it without running it)."""
    out = subprocess.run(["make", "-n", "-s", "web"], cwd=ROOT, capture_output=True, text=True, check=True)
    command = out.stdout.replace("\\\n", " ")
    line = next(line for line in command.splitlines() if "gunicorn annotator.wsgi" in line)
    return shlex.split(line)


def test_the_served_access_log_writes_no_query_string_and_no_referer():
    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    args = served_gunicorn_args()
    assert "--access-logformat" in args and "--access-logfile" in args
    config = Config()
    config.set("accesslog", "-")
    config.set("access_log_format", args[args.index("--access-logformat") + 1])
    log = Logger(config)
    stream = io.StringIO()
    log.access_log.handlers = [logging.StreamHandler(stream)]
    query = f"PROLIFIC_PID={PID_A}&STUDY_ID=st1&SESSION_ID={SESSION}"
    path = "/study/tok3n/"
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": f"{path}?{query}",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "203.0.113.7",
        "HTTP_REFERER": f"https://eval.example.org{path}?{query}",
        "HTTP_USER_AGENT": "Mozilla/5.0",
    }

    class Response:
        status, sent, headers = "302 Found", 0, [("Location", "/annotate/1/next/")]

    log.access(Response(), [("Referer", environ["HTTP_REFERER"])], environ, timedelta(milliseconds=12))
    line = stream.getvalue()
    assert '"GET /study/tok3n/ HTTP/1.1" 302' in line  # the request is still there, with its path
    assert PID_A not in line and SESSION not in line and "?" not in line


@pytest.mark.django_db
def test_every_answer_at_the_study_link_sends_no_referer():
    batch = make_batch("logs", n_items=1, k=3)
    _link, token = prolific_link(batch, quota=5)
    refused = Client().get(entry_url(token, "not-an-id", session="other"))
    assert refused.status_code == 403
    first = Client()
    entered = first.get(entry_url(token, PID_A, session=SESSION))
    assert entered.status_code == 302 and "?" not in entered["Location"]  # on to a clean address
    for n in range(2):
        make_annotation(batch.items.get(), make_user(f"lab{n}"), SCORES)
    start(first, batch)
    rate_next(first, batch)
    full = Client().get(entry_url(token, "b" * 24, session="third"))
    assert 'id="study-full"' in full.content.decode()
    for response in (entered, refused, full):
        assert response["Referrer-Policy"] == "no-referrer"
