"""Launching Debian's Chromium for the browser tests, and signing a user in without the login form."""

from __future__ import annotations

import os
import shutil

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls in tests are synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = shutil.which("chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """Close the database connections the test body opened. Playwright's sync API switches greenlets,
    which gives the body a context of its own, so Django's per-context connections opened there are not
    the ones its teardown closes; left open, they keep PostgreSQL from dropping the test database."""
    yield
    from django.db import connections

    connections.close_all()


@pytest.fixture
def chromium():
    """A headless Chromium (the tests using it skip when it is not installed)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, live_server):
    """A desktop-sized page with generous timeouts (CI machines can be busy)."""
    context = chromium.new_context(viewport={"width": 1360, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def signed_in_context(browser, live_server, user, viewport=None):
    """A browser context holding a session of ``user`` (as if they had logged in)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport=viewport or {"width": 1360, "height": 1000})
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return context


def htmx_settled(page, selector: str, timeout: float = 30_000) -> None:
    """Wait for ``selector`` to appear and for htmx to finish settling the swap that brought it.

    The page's scripts (focus, caps, the current row) run on ``htmx:afterSettle``, a moment after
    the new content is in the page; asserting on them before that is a race on a busy machine.
    """
    page.wait_for_selector(selector, timeout=timeout)
    page.wait_for_function(
        "!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')",
        timeout=timeout,
    )


def rating_ready(page, timeout: float = 30_000) -> None:
    """Wait until the rating form is in the page and its (deferred) script has marked the row the keys
    act on: keys pressed before that are lost, as they would be for a person on a slow connection."""
    page.wait_for_selector("#rate-form .kb-row.is-current", timeout=timeout)
