"""Settings for the test suite: the app's own settings with a throwaway secret key."""

import os
import tempfile
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("HTTPS_ONLY", "0")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")

from annotator.settings import *

# Fast hashing keeps the suite quick; production keeps Django's default.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Login throttling is exercised by its own test (override_settings); elsewhere the test client's
# login() passes no request, which django-axes refuses.
AXES_ENABLED = False

# The public link pages' per-address limit is tested on its own (override_settings); elsewhere many
# requests come from the one test address.
ANNOTATOR_LINK_OPENS_PER_MINUTE = 100_000

# Link commands never pick up the address of a `make demo` running beside the tests.
ANNOTATOR_DEMO_ADDRESS_FILE = Path(tempfile.gettempdir()) / "annotator-tests-no-demo-address"

# Background tasks run at once, inside the request that queues them (the worker's code path).
TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}

# Static files straight from static/ (no collectstatic before tests).
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True

# On SQLite the test database is a file (one per test run), not shared-cache memory: threads
# (the assignment race test, the live server) then lock the way production SQLite does, with
# the busy timeout, instead of failing with "database table is locked".
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    import tempfile

    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(tempfile.gettempdir(), f"annotator-test-{os.getpid()}.sqlite3")
    }

# Tests assert the rating page's batch progress right after the writes that change it; the
# per-process cache of that part has its own test (test_rating_progress_cache.py).
ANNOTATOR_PROGRESS_CACHE_SECONDS = 0
