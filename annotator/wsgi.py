"""WSGI entry point (gunicorn annotator.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
# Read by the settings: a web process bounds each database statement (DB_STATEMENT_TIMEOUT_S).
os.environ.setdefault("ANNOTATOR_WEB_PROCESS", "1")
application = get_wsgi_application()
