"""Settings for the annotator project, read from the environment.

SQLite under ``var/`` works out of the box; set ``DATABASE_URL`` for PostgreSQL.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {value!r}") from exc


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = env_bool("DEBUG", default=False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY in the environment, or DEBUG=1 for local development."
        )
    SECRET_KEY = "insecure-development-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "axes",
    "django_tasks",
    "django_tasks_db",
    "annotator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into a 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "annotator.urls"
WSGI_APPLICATION = "annotator.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotator.roles.context_processor",
            ],
        },
    },
]


def database_config() -> dict:
    url = os.environ.get("DATABASE_URL", "").strip()
    if not url:
        VAR_DIR.mkdir(exist_ok=True)
        url = f"sqlite:///{VAR_DIR / 'annotator.sqlite3'}"
    config = dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # Writers queue behind one lock instead of failing with "database is locked".
        # (persistent connections: CONN_MAX_AGE applies to SQLite too)
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": env_int("SQLITE_BUSY_TIMEOUT_S", 30),
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    else:
        config["CONN_HEALTH_CHECKS"] = True
    return config


DATABASES = {"default": database_config()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Login throttling by django-axes: after LOGIN_FAILURE_LIMIT failures for one username from one
# address, that pair is locked out for LOGIN_COOLOFF_MINUTES.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = env_int("LOGIN_COOLOFF_MINUTES", 15) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_IPWARE_PROXY_COUNT = env_int("PROXY_COUNT", 0) or None

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Production hardening: on by default when DEBUG is off. HTTPS_ONLY=0 serves plain HTTP (a
# benchmark on loopback, or behind a proxy that already redirects) without secure-only cookies.
HTTPS_ONLY = env_bool("HTTPS_ONLY", default=not DEBUG)
SESSION_COOKIE_SECURE = HTTPS_ONLY
CSRF_COOKIE_SECURE = HTTPS_ONLY
SECURE_SSL_REDIRECT = HTTPS_ONLY
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000 if HTTPS_ONLY else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS_ONLY
SECURE_HSTS_PRELOAD = HTTPS_ONLY
SESSION_COOKIE_HTTPONLY = True
SESSION_ENGINE = "django.contrib.sessions.backends.db"  # shared by every app server
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if env_bool("BEHIND_TLS_PROXY"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Background work (long uploads, report builds of large batches): django-tasks with its database
# backend; `python manage.py db_worker` (make worker) runs the queued tasks.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}

# Application settings.
ANNOTATOR_LEASE_MINUTES = env_int("ANNOTATOR_LEASE_MINUTES", 30)
ANNOTATOR_UPLOAD_MAX_BYTES = env_int("ANNOTATOR_UPLOAD_MAX_MB", 50) * 1024 * 1024
# Uploaded files wait here between the preview and the confirm step (removed after a day).
ANNOTATOR_UPLOAD_DIR = Path(os.environ.get("ANNOTATOR_UPLOAD_DIR", "") or VAR_DIR / "uploads")
ANNOTATOR_DEFAULT_RUBRIC = BASE_DIR / "fixtures" / "rubrics" / "hcs.json"
# Confirmed uploads above this size, and HTML/JSON reports of batches with more items than this,
# are built by the background worker while the page shows their progress; smaller ones stay
# synchronous (the demo needs no worker).
ANNOTATOR_BACKGROUND_UPLOAD_BYTES = env_int("ANNOTATOR_BACKGROUND_UPLOAD_KB", 2048) * 1024
ANNOTATOR_BACKGROUND_REPORT_ITEMS = env_int("ANNOTATOR_BACKGROUND_REPORT_ITEMS", 5000)
# Uploads are read in memory up to the upload limit, then checked in one piece.
DATA_UPLOAD_MAX_MEMORY_SIZE = ANNOTATOR_UPLOAD_MAX_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
