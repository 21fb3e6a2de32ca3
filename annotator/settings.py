"""Settings for the annotator project, read from the environment.

SQLite under ``var/`` works out of the box; set ``DATABASE_URL`` for PostgreSQL.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from annotator.env import env_bool, env_int, env_json_object, env_list, env_rate, env_secret, env_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


DEBUG = env_bool("DEBUG", default=False)
# A management command that serves nothing (study_link, api_token, db_worker, imports): it signs no
# cookie a server will read, so on a developer's machine it runs without a SECRET_KEY. Anything that
# serves (gunicorn, any WSGI host, runserver) still needs one unless DEBUG=1.
_ARGV = [os.path.basename(sys.argv[0]) if sys.argv else "", *sys.argv[1:2]]
LOCAL_COMMAND = _ARGV[0] in ("manage.py", "django-admin") and _ARGV[1:] != ["runserver"]
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not (DEBUG or LOCAL_COMMAND):
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
    "ninja",  # the HTTP API (annotator/api/); listed so its docs page serves Swagger UI from static/
    "annotator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads the session or the database: a request that waited past
    # REQUEST_QUEUE_DEADLINE_S for a thread (nginx's X-Request-Start) is answered 503 at once.
    "annotator.middleware.RequestQueueDeadlineMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's AuthenticationMiddleware, with the user read in the session's own query.
    "annotator.middleware.SessionUserMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Errors under /api/ that no API handler wrote (405, an unknown path) become problem details too.
    "annotator.api.problems.ApiProblemMiddleware",
    # A view that loses the database answers the 503 page, DEBUG or not (inside ApiProblemMiddleware,
    # which makes it problem details under /api/).
    "annotator.views.errors.DatabaseOutageMiddleware",
    # A form's address opened by GET: a page saying so, not the browser's blank error page.
    "annotator.not_allowed.NotAllowedPageMiddleware",
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


# A web process (gunicorn imports annotator.wsgi, which says so before the settings load; or the
# development server) bounds each statement; management commands and the background worker do not.
WEB_PROCESS = env_bool("ANNOTATOR_WEB_PROCESS", default=False) or sys.argv[1:2] == ["runserver"]
DB_STATEMENT_TIMEOUT_S = env_int("DB_STATEMENT_TIMEOUT_S", 30)
# /healthz answers 503 when the database has not answered within this many seconds.
HEALTHZ_TIMEOUT_S = env_int("HEALTHZ_TIMEOUT_S", 3, minimum=1)
# The client's own bound on one database call in a web process (0: none); it must outlast the
# statement timeout, which the server enforces when it is answering at all.
DB_QUERY_DEADLINE_S = (
    env_int("DB_QUERY_DEADLINE_S", DB_STATEMENT_TIMEOUT_S + 5 if DB_STATEMENT_TIMEOUT_S else 0)
    if WEB_PROCESS
    else 0
)
# A web process's call that has waited DB_STALL_CHECK_S seconds starts a probe (SELECT 1 on a fresh
# connection within DB_STALL_PROBE_S); a failed probe means the database is stalled, and every call
# in the process fails at once (a 503) until a probe is answered again (annotator/db_deadline.py).
DB_STALL_CHECK_S = env_int("DB_STALL_CHECK_S", 1) if WEB_PROCESS else 0
DB_STALL_PROBE_S = env_int("DB_STALL_PROBE_S", 2, minimum=1)


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
            "timeout": env_int("SQLITE_BUSY_TIMEOUT_S", 30, minimum=1),
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    else:
        config["CONN_HEALTH_CHECKS"] = True
        config["ENGINE"] = "annotator.pgbackend"  # Django's backend with a client-side deadline on each call
        options = config.setdefault("OPTIONS", {})
        # libpq: give up on a server that does not finish the connection handshake (a stalled proxy accepts
        # and never answers); probe idle connections so a vanished server is noticed; and drop a connection
        # whose sent data stays unacknowledged.
        options.setdefault("connect_timeout", env_int("DB_CONNECT_TIMEOUT_S", 5, minimum=2))
        options.setdefault("keepalives", 1)
        options.setdefault("keepalives_idle", env_int("DB_KEEPALIVE_IDLE_S", 30, minimum=1))
        options.setdefault("keepalives_interval", 10)
        options.setdefault("keepalives_count", 3)
        options.setdefault("tcp_user_timeout", env_int("DB_TCP_USER_TIMEOUT_S", 30, minimum=0) * 1000)
        if WEB_PROCESS and DB_STATEMENT_TIMEOUT_S:
            # Web requests only: imports, report builds and the worker's jobs may run long on purpose.
            options["options"] = (
                f"{options.get('options', '')} -c statement_timeout={DB_STATEMENT_TIMEOUT_S * 1000}".strip()
            )
    return config


DATABASES = {"default": database_config()}
# The rating requests' own statements but the lease are prepared on PostgreSQL (annotator/hot_sql.py); off for
# a connection pooler that cannot keep prepared statements (PgBouncer before 1.22, transaction mode).
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", default=True)
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
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("LOGIN_COOLOFF_MINUTES", 15) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The client's address behind PROXY_COUNT reverse proxies: one rule for lock-outs and the link limit.
ANNOTATOR_PROXY_COUNT = env_int("PROXY_COUNT", 0)
# A request that reached an app server thread more than this many seconds after the proxy read it
# (X-Request-Start, trusted only with PROXY_COUNT >= 1) is answered 503 before anything runs; 0: off.
# Off unless set: it trusts the proxy's clock, and a proxy clock behind the app's by more than the deadline
# would refuse every request (docs/faults.md).
REQUEST_QUEUE_DEADLINE_S = env_int("REQUEST_QUEUE_DEADLINE_S", 0)
AXES_CLIENT_IP_CALLABLE = "annotator.client_address.client_network"

# A form left open while its tab's owner signed in again elsewhere: back to their step, not a bare 403.
CSRF_FAILURE_VIEW = "annotator.views.csrf_failure.csrf_failure"

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
# Database sessions (shared by every app server, revocable), loaded with their user and roles in
# one query (annotator/sessions.py).
SESSION_ENGINE = "annotator.sessions"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if env_bool("BEHIND_TLS_PROXY"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Background work (long uploads, report builds of large batches): django-tasks with its database
# backend; `python manage.py db_worker` (make worker) runs the queued tasks.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}

# Application settings.
ANNOTATOR_LEASE_MINUTES = env_int("ANNOTATOR_LEASE_MINUTES", 30, minimum=1)
# The rating page's batch progress (items complete, items with a free slot) is at most this old.
ANNOTATOR_PROGRESS_CACHE_SECONDS = env_int("ANNOTATOR_PROGRESS_CACHE_SECONDS", 5)
# Study, invite and sign-in links: the address printed links start with, and how often one client
# address may open such links per minute.
ANNOTATOR_SITE_URL_DEFAULT = "http://127.0.0.1:8000"
ANNOTATOR_SITE_URL = (os.environ.get("SITE_URL", "").strip().rstrip("/")) or ANNOTATOR_SITE_URL_DEFAULT
ANNOTATOR_SITE_URL_SET = bool(os.environ.get("SITE_URL", "").strip())  # else the link commands say so
# Where `make demo` writes the address it serves, for link commands run from another shell.
ANNOTATOR_DEMO_ADDRESS_FILE = VAR_DIR / "demo_site_url"
if not ANNOTATOR_SITE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"SITE_URL={ANNOTATOR_SITE_URL!r} must start with https:// (or http://).")
ANNOTATOR_LINK_OPENS_PER_MINUTE = env_int("LINK_OPENS_PER_MINUTE", 30, minimum=1)
ANNOTATOR_UPLOAD_MAX_BYTES = env_int("ANNOTATOR_UPLOAD_MAX_MB", 50, minimum=1) * 1024 * 1024
# Uploaded files wait between the preview and the confirm step (removed after a day) in the storage
# STORAGES["uploads"]: this folder by default; ANNOTATOR_UPLOAD_STORAGE names another Django storage
# backend (e.g. storages.backends.s3.S3Storage) and ANNOTATOR_UPLOAD_STORAGE_OPTIONS its options as
# a JSON object, so app servers behind a load balancer share no disk.
ANNOTATOR_UPLOAD_DIR = Path(os.environ.get("ANNOTATOR_UPLOAD_DIR", "") or VAR_DIR / "uploads")
_UPLOAD_BACKEND = os.environ.get("ANNOTATOR_UPLOAD_STORAGE", "").strip()
if _UPLOAD_BACKEND:
    STORAGES["uploads"] = {
        "BACKEND": _UPLOAD_BACKEND,
        "OPTIONS": env_json_object("ANNOTATOR_UPLOAD_STORAGE_OPTIONS"),
    }
else:
    STORAGES["uploads"] = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {
            "location": ANNOTATOR_UPLOAD_DIR,
            "file_permissions_mode": 0o600,
            "directory_permissions_mode": 0o700,
        },
    }
# Confirmed uploads above this size, and HTML/JSON reports of batches with more items than this,
# are built by the background worker while the page shows their progress; smaller ones stay
# synchronous (the demo needs no worker).
ANNOTATOR_BACKGROUND_UPLOAD_BYTES = env_int("ANNOTATOR_BACKGROUND_UPLOAD_KB", 2048) * 1024
ANNOTATOR_BACKGROUND_REPORT_ITEMS = env_int("ANNOTATOR_BACKGROUND_REPORT_ITEMS", 5000)
# A running job's worker writes a heartbeat this often; a job on another machine whose heartbeat is
# older than the second figure is taken for dead (failed, to be tried again).
ANNOTATOR_JOB_HEARTBEAT_SECONDS = env_int("JOB_HEARTBEAT_S", 10, minimum=1)
ANNOTATOR_JOB_STALE_SECONDS = env_int("JOB_STALE_AFTER_S", 60, minimum=2)
# The environment variables a judge run started from the web may read its API key from (the worker's
# environment). Only these: a researcher must not be able to send any other secret to a URL they name.
ANNOTATOR_JUDGE_KEY_ENVS = env_list("ANNOTATOR_JUDGE_KEY_ENVS", "OPENAI_API_KEY")
# The HTTP API: requests per token (or signed-in user) per period, and failed token attempts per
# client address and minute, both counted in the database (shared by every app server and process);
# and the longest token lifetime.
ANNOTATOR_API_RATE = env_rate("ANNOTATOR_API_RATE", "120/min")
ANNOTATOR_API_TOKEN_FAILURES_PER_MINUTE = env_int("API_TOKEN_FAILURES_PER_MINUTE", 20, minimum=1)
ANNOTATOR_API_TOKEN_MAX_DAYS = env_int("ANNOTATOR_API_TOKEN_MAX_DAYS", 365, minimum=1)
# Prolific (manage.py prolific_review, the Studies page, the webhook): the token and the webhook secret
# come only from the environment and are never stored or logged.
PROLIFIC_API_URL = env_url("PROLIFIC_API_URL", "https://api.prolific.com")
PROLIFIC_API_TOKEN = env_secret("PROLIFIC_API_TOKEN")
PROLIFIC_WEBHOOK_SECRET = env_secret("PROLIFIC_WEBHOOK_SECRET")
# A webhook whose signed timestamp is further than this from the server's clock is refused: a
# captured delivery cannot be replayed later (within the window, the event id makes it act once).
PROLIFIC_WEBHOOK_MAX_AGE_S = env_int("PROLIFIC_WEBHOOK_MAX_AGE_S", 900, minimum=1)
# Streams (docs/streams.md): drift alerts are POSTed to this URL, signed with HMAC-SHA256 under the
# secret (header X-HCS-Signature), by the background worker, with this many attempts and a backoff that
# doubles from this many seconds. No URL: alerts are listed, not sent.
STREAM_ALERT_WEBHOOK_URL = env_url("STREAM_ALERT_WEBHOOK_URL", "")
STREAM_ALERT_WEBHOOK_SECRET = env_secret("STREAM_ALERT_WEBHOOK_SECRET")
STREAM_ALERT_WEBHOOK_ATTEMPTS = env_int("STREAM_ALERT_WEBHOOK_ATTEMPTS", 6, minimum=1)
STREAM_ALERT_WEBHOOK_BACKOFF_SECONDS = env_int("STREAM_ALERT_WEBHOOK_BACKOFF_SECONDS", 30, minimum=0)
# After traces arrive, the worker computes the changed windows of every series of the stream this many
# seconds later (one refresh for all the traces of that time), so a read finds them stored.
STREAM_SERIES_REFRESH_DELAY_S = env_int("STREAM_SERIES_REFRESH_DELAY_S", 30, minimum=0)
# Uploads are read in memory up to the upload limit, then checked in one piece.
DATA_UPLOAD_MAX_MEMORY_SIZE = ANNOTATOR_UPLOAD_MAX_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
