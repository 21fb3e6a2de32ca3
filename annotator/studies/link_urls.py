"""The full URLs of links, for the commands (``SITE_URL``) and the admin page (the request's host)."""

from __future__ import annotations

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
