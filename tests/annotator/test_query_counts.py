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
from django.utils import timezone

from annotator.models import Enrolment, QualityRule
from tests.factories import make_batch, make_gold_items, make_user

# Real transactions, as in production: inside a test transaction every atomic block would add
# SAVEPOINT statements to the count.
pytestmark = pytest.mark.django_db(transaction=True)

SCORES = {
    "score_coherence": "4",
    "score_relevance": "4",
    "score_instruction_following": "3",
    "score_safety_compliance": "5",
    "score_fluency": "5",
    "constraint_0": "met",
    "constraint_1": "met",
}
ACTION = re.compile(r'action="(/annotate/item/\d+/submit/)"')
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "rate-area"}
# Statements other than BEGIN/COMMIT. PostgreSQL runs the rating path's statements written by hand:
# - GET next: the session with its user, roles and scope | the batch with the annotator's enrolment,
#   study link, standing and the batch's quality rule | the user-row lock and the lease, which
#   checks the standing and that no lease is live itself (two statements in one message, their
#   own transaction, logged as one) | the progress strip's counts.
# - POST scores: the session | the item with the same facts | the submission (one statement,
#   taking the user-row lock first).
# - htmx POST: the session | the item | the submission | then the next lease and the progress strip
#   as on the GET, reusing the facts the POST read.
# A study batch with quality control (consent, instructions, quota, session length, check items)
# runs the same statements: the quota and the check schedule read their counts in the facts query.
# SQLite runs the session and facts statements as they are (the same text on both databases) and
# takes the ORM paths where PostgreSQL's spelling is its own: the lease's row is a second INSERT,
# the progress strip a query per part (the study batch's gold answers one more), and the
# submission the ORM's five statements (the assignment, its update, the annotation, the scores,
# the item), each built once per process.
PAGE_TRIP = {"postgresql": 7, "sqlite": 13}
HTMX_TRIP = {"postgresql": 5, "sqlite": 11}
STUDY_EXTRA = {"postgresql": 0, "sqlite": 1}  # per GET of a page (the progress strip's gold part)
# BEGIN and COMMIT per round trip: on PostgreSQL every statement of the common path is its own
# transaction (no round trip spent opening or closing one); SQLite opens BEGIN IMMEDIATE for the
# submission and for the lease.
PAGE_TRANSACTIONS = {"postgresql": 0, "sqlite": 2}
HTMX_TRANSACTIONS = {"postgresql": 0, "sqlite": 2}
TRANSACTION_CONTROL = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK)\b", re.IGNORECASE)


def statements(ctx) -> int:
    return sum(1 for q in ctx.captured_queries if not TRANSACTION_CONTROL.match(q["sql"]))


def transactions(ctx) -> int:
    return sum(1 for q in ctx.captured_queries if q["sql"].split(None, 1)[0].upper() == "BEGIN")


@pytest.fixture(autouse=True)
def no_expiry_sweep(monkeypatch):
    """The lease expiry sweep adds one query at most every 20 s per process; keep it out of the count."""
    monkeypatch.setattr("annotator.rating.services.assignment._sweep_due", lambda now: False)


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
    assert htmx_trip_counts(client, batch) == [HTMX_TRIP[connection.vendor]] * 3


def htmx_trip_counts(client, batch, trips: int = 3) -> list[int]:
    """Statements of each of ``trips`` htmx round trips from the batch's next-item page."""
    page = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    counts = []
    for _ in range(trips):
        count, page = htmx_trip_queries(client, page)
        counts.append(count)
    return counts


def study_batch_with_checks(n_items: int, annotator):
    """A study batch with every feature that reads per request: consent, instructions, a quota,
    a session length, and quality control with check items (none due in the trips counted)."""
    batch = make_batch(f"study{n_items}", n_items=n_items)
    batch.consent_text, batch.instructions = "You agree to rate.", "Read each response in full."
    batch.max_items_per_annotator, batch.max_session_minutes = 500, 600
    batch.save()
    QualityRule.objects.create(batch=batch, check_every=50, training_items=0)
    dims = [d.key for d in batch.rubric_obj.dimensions]
    make_gold_items(
        batch,
        "check",
        3,
        prompt="Plan a route.",
        response="Go north.",
        scores=dict.fromkeys(dims, 3),
        flags=[],
        tolerance=1,
    )
    now = timezone.now()
    Enrolment.objects.create(user=annotator, batch=batch, consented_at=now, instructions_seen_at=now)
    return batch


@pytest.mark.parametrize("n_items", [20, 600])
def test_study_and_quality_control_add_no_statement(n_items, monkeypatch):
    # Each block's check comes at a place hashed from the batch's and the annotator's ids (1 … 49 here):
    # put it at the block's end, so no check falls among the six ratings counted, whatever the ids are.
    monkeypatch.setattr(
        "annotator.quality.services.gold.check_offset", lambda *, check_every, **_: check_every - 1
    )
    user = make_user("ann")
    batch = study_batch_with_checks(n_items, user)
    client = Client()
    client.force_login(user)
    extra = STUDY_EXTRA[connection.vendor]
    assert [page_trip_queries(client, batch) for _ in range(3)] == [PAGE_TRIP[connection.vendor] + extra] * 3
    assert htmx_trip_counts(client, batch) == [HTMX_TRIP[connection.vendor] + extra] * 3


def test_the_common_round_trip_opens_no_transaction_on_postgresql():
    """Each BEGIN and COMMIT is a round trip to PostgreSQL; the common path needs none."""
    batch = make_batch("tx", n_items=20)
    client = Client()
    client.force_login(make_user("ann"))
    with CaptureQueriesContext(connection) as ctx:
        page = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
        assert client.post(ACTION.search(page).group(1), SCORES).status_code == 302
    assert transactions(ctx) == PAGE_TRANSACTIONS[connection.vendor]
    page = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    with CaptureQueriesContext(connection) as ctx:
        assert client.post(ACTION.search(page).group(1), SCORES, **HTMX).status_code == 200
    assert transactions(ctx) == HTMX_TRANSACTIONS[connection.vendor]
