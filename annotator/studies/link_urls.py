"""The full URLs of links, for the commands (``SITE_URL``) and the admin page (the request's host)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.urls import reverse

from annotator.studies.crowd import PLATFORMS


def _absolute(path: str, base: str | None) -> str:
    return (base if base is not None else settings.ANNOTATOR_SITE_URL).rstrip("/") + path


def study_url(token: str, platform: str, base: str | None = None) -> str:
    """What to paste into the platform: the link with the platform's id placeholders."""
    return _absolute(reverse("study_entry", args=[token]), base) + "?" + PLATFORMS[platform].query_template()


def new_worker_url(token: str, base: str | None = None) -> str:
    """The demo's link that opens the study as a new worker on each visit (DEBUG servers only)."""
    return _absolute(reverse("study_new_worker", args=[token]), base)


def invite_url(token: str, base: str | None = None) -> str:
    return _absolute(reverse("invite", args=[token]), base)


def signin_url(token: str, base: str | None = None) -> str:
    return _absolute(reverse("signin_link", args=[token]), base)


def base_of(request) -> str:
    return request.build_absolute_uri("/").rstrip("/")


def _serving(base: str) -> bool:
    """Whether something answers a TCP connection at the address (the demo server still runs)."""
    parts = urlsplit(base)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "", port), timeout=0.5):
            return True
    except (OSError, ValueError):
        return False


def command_base(base_url: str | None) -> tuple[str | None, str]:
    """The address a command's printed links start with, and a sentence for the researcher ('' when
    none is needed). ``--base-url`` wins, then ``SITE_URL``. Without either, a command run from
    another shell than ``make demo PORT=...`` would print the default port: it uses the address the
    demo serves while the demo runs, and otherwise says to set ``SITE_URL``."""
    default = settings.ANNOTATOR_SITE_URL
    if base_url or settings.ANNOTATOR_SITE_URL_SET or default != settings.ANNOTATOR_SITE_URL_DEFAULT:
        return base_url, ""
    try:
        demo = settings.ANNOTATOR_DEMO_ADDRESS_FILE.read_text().strip().rstrip("/")
    except OSError:
        demo = ""
    if demo.startswith(("http://", "https://")) and _serving(demo):
        return demo, (
            f"SITE_URL is not set: the link starts with {demo}, where `make demo` serves now. For a "
            "real study, set SITE_URL to the server's public address."
        )
    return None, (
        f"SITE_URL is not set, so the link starts with the default {default}. If the app is served "
        "elsewhere (`make demo PORT=8101` serves http://127.0.0.1:8101), set SITE_URL to that address "
        "(or pass --base-url), or replace the start of the link: the part from /study/, /invite/ or "
        "/signin/ on works at any address."
    )
