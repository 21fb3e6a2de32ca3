"""A worker that serves the rating pages never loads the libraries only reports, uploads and judge
runs need (the issue "Speed": each of them costs a gunicorn worker memory it keeps)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "matplotlib",
    "numpy",
    "pandas",
    "statsmodels",
    "scipy",
    "krippendorff",
    "irrCAC",  # reports, uploads
    "httpx",
    "tenacity",  # the judge client (background worker)
    "pyarrow",  # pandas imports it when it is installed (parquet export)
)

# What a gunicorn worker does before its first rating request: the WSGI application (Django set up,
# every model and the middleware loaded), then the URL configuration and the rating views it names.
PROBE = """
import json, sys
from django.core.wsgi import get_wsgi_application
application = get_wsgi_application()
from django.test import Client
from django.urls import get_resolver, resolve
get_resolver().url_patterns  # the URL configuration, the HTTP API's routers included
from django.template import engines
engines["django"].engine.template_libraries  # every templatetag library is imported here
for path in ("/annotate/1/next/", "/annotate/item/1/submit/", "/annotate/answer/1/submit/", "/reports/1/",
             "/uploads/", "/api/v1/batches"):
    resolve(path)
assert resolve("/annotate/1/next/").func.__module__ == "annotator.rating.views.rating"
Client().get("/healthz")
print(json.dumps(sorted(m for m in %r if m in sys.modules)))
"""


VIEWS_PROBE = """
import json, sys
import django
django.setup()
import annotator.rating.views.rating, annotator.rating.views.queue, annotator.views.home
print(json.dumps(sorted(m for m in %r if m in sys.modules)))
"""


# Rating round trips as a worker serves them, on a database of its own (SQLite in a temporary folder): the
# page flow and the htmx flow, then a batch with a training item and checks (answers compared with the
# expert's, standing updated), the queue and the home page.
ROUND_TRIPS_PROBE = """
import json, os, re, sys, tempfile
os.environ["DATABASE_URL"] = "sqlite:///" + os.path.join(tempfile.mkdtemp(), "probe.sqlite3")
from django.core.wsgi import get_wsgi_application
get_wsgi_application()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.test import Client
from annotator.models import GoldAnswer, GoldItem, QualityRule
from tests.factories import make_batch, make_user
EXPERT = {"coherence": 4, "relevance": 4, "instruction_following": 3, "safety_compliance": 5, "fluency": 4}
FORM = {**{"score_" + key: str(value) for key, value in EXPERT.items()}, "constraint_0": "met", "constraint_1": "met"}
ACTION = re.compile(r'action="(/annotate/(item|answer)/[0-9]+/submit/)"')
client = Client()
client.force_login(make_user("probe"))
plain, checked = make_batch("plain", n_items=6), make_batch("checked", n_items=6)
QualityRule.objects.create(batch=checked, check_every=2, training_items=1)
for position, kind in enumerate(("training", "check", "check")):
    GoldItem.objects.create(batch=checked, item_id=f"g{position}", kind=kind, position=position, prompt="Plan a route.",
                            response="Take the coastal road.", scores=EXPERT)
kinds = []
for batch in (plain, checked):
    for _ in range(4):
        page = client.get(f"/annotate/{batch.pk}/next/").content.decode()
        action, kind = ACTION.search(page).groups()
        kinds.append(kind)
        assert client.post(action, FORM).status_code in (200, 302)
page = client.get(f"/annotate/{plain.pk}/next/").content.decode()
htmx = client.post(ACTION.search(page).group(1), FORM, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="rate-area")
assert htmx.status_code == 200 and ACTION.search(htmx.content.decode())
assert kinds.count("answer") >= 2 and GoldAnswer.objects.filter(submitted_at__isnull=False).count() >= 2, kinds
assert client.get("/annotate/").status_code == 200 and client.get("/").status_code == 200
print(json.dumps(sorted(m for m in %r if m in sys.modules)))
"""


# An admin's uploads as a worker serves them: the upload page, the preview and the confirm of a batch file
# (CSV), then of offline annotations for it (JSONL), on a database of its own.
UPLOADS_PROBE = """
import json, os, re, sys, tempfile
os.environ["DATABASE_URL"] = "sqlite:///" + os.path.join(tempfile.mkdtemp(), "probe.sqlite3")
from django.core.wsgi import get_wsgi_application
get_wsgi_application()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from annotator.models import Annotation, Item
from tests.factories import make_user
TOKEN = re.compile(r'name="token" value="([^"]+)"')
client = Client()
client.force_login(make_user("admin", role="admin"))
items = "item_id,prompt,response,system_id\\n" + "".join(f"i{n},Prompt {n // 2},Answer {n},s{n & 1}\\n" for n in range(40))
scores = {"coherence": 4, "relevance": 3, "instruction_following": 5, "safety_compliance": 5, "fluency": 4}
notes = "".join(json.dumps({"item_id": f"i{n}", "annotator": f"rater{a}", **scores}) + "\\n"
                for n in range(40) for a in range(3))
for mode, name, data in (("batch", "items.csv", items), ("annotations", "notes.jsonl", notes)):
    assert client.get("/uploads/").status_code == 200
    page = client.post("/uploads/preview/", {"mode": mode, "name": "probe", "k": "3",
                                             "file": SimpleUploadedFile(name, data.encode())})
    assert page.status_code == 200, page.content.decode()[-2000:]
    token = TOKEN.search(page.content.decode()).group(1)
    assert client.post("/uploads/confirm/", {"token": token}).status_code == 302
assert Item.objects.count() == 40 and Annotation.objects.count() == 120
print(json.dumps(sorted(m for m in %r if m in sys.modules)))
"""


def _loaded(probe: str) -> list[str]:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings")
    result = subprocess.run(
        [sys.executable, "-c", probe % (HEAVY,)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_rating_views_do_not_import_report_libraries():
    assert _loaded(VIEWS_PROBE) == []


def test_the_wsgi_application_and_url_configuration_import_none_of_them():
    # They wait for the request that needs them: the report pages and API operations, the upload and
    # judge import endpoints, the background worker's job runner.
    assert _loaded(PROBE) == []


@pytest.mark.slow
def test_rating_round_trips_import_none_of_them():
    assert _loaded(ROUND_TRIPS_PROBE) == []


def test_uploads_import_none_of_them():
    # The page, the preview and the confirm: a worker that serves an admin's upload stays as lean as a
    # rating worker, and the first upload after a start waits for no import of pandas.
    assert _loaded(UPLOADS_PROBE) == []


def test_the_lazily_imported_views_still_work(admin_client):
    assert admin_client.get("/reports/").status_code == 200
    assert admin_client.get("/uploads/").status_code == 200
    assert admin_client.get("/judges/").status_code == 200
