"""Settings for the test suite: the app's own settings with a throwaway secret key."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")

from annotator.settings import *  # noqa: E402,F403

# Fast hashing keeps the suite quick; production keeps Django's default.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
