"""SQL per rating round trip: a small fixed number, the same for a batch of 20 items or 600.

Timings are measured by bench/annotate_bench.py, never asserted here; query counts do not
depend on the machine's load, so they are.
"""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import make_batch, make_user

# Real transactions, as in production: inside a test transaction every atomic block would add
# SAVEPOINT statements to the count.
pytestmark = pytest.mark.django_db(transaction=True)

SCORES = {
    "score_coherence": "4", "score_relevance": "4", "score_instruction_following": "3",
    "score_safety_compliance": "5", "score_fluency": "5", "constraint_0": "met", "constraint_1": "met",
}
ACTION = re.compile(r'action="(/annotate/item/\d+/submit/)"')
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "rate-area"}
# Statements other than BEGIN/COMMIT. PostgreSQL: session+user+roles, batch, live lease, lease (one
# statement) | session+user+roles, item, submission. SQLite writes the lease in several statements
# (it has no data-modifying CTEs). Crowd studies and quality control
# add, on every rating request, the account's scope and enrolment (the study detour), and on every
# lease the annotator's standing and the batch's quality rule (gold items), the user-row lock
# (PostgreSQL only) and the standing read that keep exclusions exact; the submission takes the lock too.
# The rating page's progress strip adds two grouped counts (and, in batches with gold items only,
# the annotator's gold-answer count). The submission is one ORM path on both databases (lock the
# assignment row, mark it, insert the annotation and its scores, move the item's counters), where
# PostgreSQL had one hand-written statement. Before these: PostgreSQL 7 and 5, SQLite 11 and 9.
PAGE_TRIP = {"postgresql": 22, "sqlite": 21}
HTMX_TRIP = {"postgresql": 19, "sqlite": 18}
TRANSACTION_CONTROL = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK)\b", re.IGNORECASE)


def statements(ctx) -> int:
    return sum(1 for q in ctx.captured_queries if not TRANSACTION_CONTROL.match(q["sql"]))


@pytest.fixture(autouse=True)
def no_expiry_sweep(monkeypatch):
    """The lease expiry sweep adds one query at most every 20 s per process; keep it out of the count."""
    monkeypatch.setattr("annotator.services.assignment._sweep_due", lambda now: False)


def page_trip_queries(client, batch) -> int:
    with CaptureQueriesContext(connection) as ctx:
        page = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
        response = client.post(ACTION.search(page).group(1), SCORES)
    assert response.status_code == 302
    return statements(ctx)


def htmx_trip_queries(client, page: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.post(ACTION.search(page).group(1), SCORES, **HTMX)
    assert response.status_code == 200
    return statements(ctx), response.content.decode()


@pytest.mark.parametrize("n_items", [20, 600])
def test_page_round_trip_runs_a_fixed_number_of_queries(n_items):
    batch = make_batch(f"b{n_items}", n_items=n_items)
    client = Client()
    client.force_login(make_user("ann"))
    counts = [page_trip_queries(client, batch) for _ in range(3)]
    assert counts == [PAGE_TRIP[connection.vendor]] * 3


@pytest.mark.parametrize("n_items", [20, 600])
def test_htmx_round_trip_runs_a_fixed_number_of_queries(n_items):
    batch = make_batch(f"b{n_items}", n_items=n_items)
    client = Client()
    client.force_login(make_user("ann"))
    page = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    counts = []
    for _ in range(3):
        count, page = htmx_trip_queries(client, page)
        counts.append(count)
    assert counts == [HTMX_TRIP[connection.vendor]] * 3
