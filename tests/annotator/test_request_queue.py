"""A request that waited past REQUEST_QUEUE_DEADLINE_S for an app server thread (nginx's
X-Request-Start) is answered with the app's own 503 before anything runs; a fresh one, or one whose
stamp is missing, made up or not to be trusted, is served as before."""

import json
import os
import time

import pytest
from django.test import Client
from django.urls import reverse

from annotator.middleware import request_start
from annotator.models import Annotation, Score
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db

FORM = {
    "score_coherence": "4",
    "score_relevance": "4",
    "score_instruction_following": "3",
    "score_safety_compliance": "5",
    "score_fluency": "4",
    "constraint_0": "met",
    "constraint_1": "met",
}


@pytest.fixture
def behind_proxy(settings):
    settings.ANNOTATOR_PROXY_COUNT = 1
    settings.REQUEST_QUEUE_DEADLINE_S = 4
    return settings


@pytest.fixture
def rater():
    client = Client(raise_request_exception=False)
    client.force_login(make_user("ann"))
    return client


def stamp(age_s: float) -> dict:
    return {"HTTP_X_REQUEST_START": f"t={time.time() - age_s:.3f}"}


def first_item(client, batch):
    return client.get(reverse("annotate_next", args=[batch.pk])).context["item"]


def test_a_submit_that_waited_too_long_gets_the_503_page_and_saves_nothing(behind_proxy, rater):
    batch = make_batch("b", n_items=2)
    item = first_item(rater, batch)
    response = rater.post(reverse("annotate_submit", args=[item.pk]), FORM, **stamp(6))
    page = response.content.decode()
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert '<div id="error-message">' in page and "what you entered" in page  # the breaker's page
    assert "go back to the page you came from" in page
    assert not Annotation.objects.exists() and not Score.objects.exists()
    # Sent again in time, it is saved once.
    assert rater.post(reverse("annotate_submit", args=[item.pk]), FORM, **stamp(0.5)).status_code == 302
    assert Annotation.objects.filter(item=item).count() == 1


def test_an_htmx_submit_gets_the_fragment_htmx_shows_beside_the_form(behind_proxy, rater):
    batch = make_batch("b", n_items=2)
    item = first_item(rater, batch)
    response = rater.post(
        reverse("annotate_submit", args=[item.pk]), FORM, HTTP_HX_REQUEST="true", **stamp(30)
    )
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert '<div id="error-message">' in response.content.decode()
    assert not Annotation.objects.exists()


def test_an_api_request_gets_a_problem(behind_proxy):
    response = Client().get("/api/v1/batches", HTTP_AUTHORIZATION="Bearer nothing", **stamp(10))
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response["Content-Type"] == "application/problem+json"
    problem = json.loads(response.content)
    assert problem["status"] == 503 and problem["instance"] == "/api/v1/batches"
    assert "nothing was done" in problem["detail"]


@pytest.mark.parametrize(
    "header",
    [
        None,  # not behind the shipped proxy config
        "",
        "t=",
        "t=yesterday",
        "t=nan",
        "t=inf",
        "t=-5",
        "t=1e400",
        "x=1700000000",
        f"t={time.time() + 3600:.3f}",  # a stamp in the future refuses nothing
    ],
)
def test_a_missing_garbled_or_future_stamp_is_served(behind_proxy, rater, header):
    batch = make_batch("b", n_items=2)
    item = first_item(rater, batch)
    extra = {} if header is None else {"HTTP_X_REQUEST_START": header}
    assert rater.post(reverse("annotate_submit", args=[item.pk]), FORM, **extra).status_code == 302
    assert Annotation.objects.filter(item=item).count() == 1


def test_a_fresh_request_is_served(behind_proxy, rater):
    batch = make_batch("b", n_items=2)
    response = rater.get(reverse("annotate_next", args=[batch.pk]), **stamp(1))
    assert response.status_code == 200


def test_without_a_proxy_the_header_is_not_read(behind_proxy, rater):
    """Straight to the app server, a client could set the header to anything: it is ignored."""
    behind_proxy.ANNOTATOR_PROXY_COUNT = 0
    batch = make_batch("b", n_items=2)
    assert rater.get(reverse("annotate_next", args=[batch.pk]), **stamp(60)).status_code == 200


def test_zero_turns_it_off(behind_proxy, rater):
    behind_proxy.REQUEST_QUEUE_DEADLINE_S = 0
    batch = make_batch("b", n_items=2)
    assert rater.get(reverse("annotate_next", args=[batch.pk]), **stamp(60)).status_code == 200


def test_it_is_off_unless_set(settings, rater):
    # A proxy whose clock lags the app's would otherwise make every request look late.
    from annotator import settings as app_settings

    assert app_settings.REQUEST_QUEUE_DEADLINE_S == 0 or "REQUEST_QUEUE_DEADLINE_S" in os.environ
    settings.ANNOTATOR_PROXY_COUNT = 1
    settings.REQUEST_QUEUE_DEADLINE_S = app_settings.REQUEST_QUEUE_DEADLINE_S
    batch = make_batch("b", n_items=2)
    assert rater.get(reverse("annotate_next", args=[batch.pk]), **stamp(60)).status_code == 200


def test_the_shed_request_touches_no_database(behind_proxy, rater, django_assert_num_queries):
    batch = make_batch("b", n_items=2)
    with django_assert_num_queries(0):
        response = rater.get(reverse("annotate_next", args=[batch.pk]), **stamp(5))
    assert response.status_code == 503


@pytest.mark.parametrize(
    ("value", "expected"),
    [("t=1700000000.123", 1700000000.123), ("1700000000", 1700000000.0), (" t=5 ", 5.0), ("t=0", None)],
)
def test_the_stamp_nginx_sends_is_read(value, expected):
    assert request_start(value) == expected
