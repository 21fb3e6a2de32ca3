"""Settings for the test suite: the app's own settings with a throwaway secret key."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("HTTPS_ONLY", "0")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")

from annotator.settings import *  # noqa: E402,F403

# Fast hashing keeps the suite quick; production keeps Django's default.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Login throttling is exercised by its own test (override_settings); elsewhere the test client's
# login() passes no request, which django-axes refuses.
AXES_ENABLED = False

# Static files straight from static/ (no collectstatic before tests).
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
