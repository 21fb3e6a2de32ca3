"""A worker that serves the rating pages never loads the libraries only reports need."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("matplotlib", "pandas", "statsmodels", "scipy", "krippendorff", "irrCAC")

PROBE = """
import json, sys
import django
django.setup()
from django.test import Client
from django.urls import resolve
import annotator.urls
from django.template import engines
engines["django"].engine.template_libraries  # every templatetag library is imported here
for path in ("/annotate/1/next/", "/annotate/item/1/submit/", "/reports/1/", "/uploads/"):
    resolve(path)
Client().get("/healthz")
print(json.dumps(sorted(m for m in %r if m in sys.modules)))
"""


VIEWS_PROBE = """
import json, sys
import django
django.setup()
import annotator.views.rating, annotator.views.queue, annotator.views.home
print(json.dumps(sorted(m for m in %r if m in sys.modules)))
"""


def _loaded(probe: str) -> list[str]:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings")
    result = subprocess.run(
        [sys.executable, "-c", probe % (HEAVY,)], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_rating_views_do_not_import_report_libraries():
    assert _loaded(VIEWS_PROBE) == []


def test_the_url_configuration_does_not_import_the_statistics_or_plotting_libraries():
    # pandas still comes in at start through the HTTP API's routers (annotator/api/batches.py
    # imports the upload parser); the rest waits for the pages that use it.
    assert _loaded(PROBE) == ["pandas"]


def test_the_lazily_imported_views_still_work(admin_client):
    assert admin_client.get("/reports/").status_code == 200
    assert admin_client.get("/uploads/").status_code == 200
    assert admin_client.get("/judges/").status_code == 200
