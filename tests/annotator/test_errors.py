"""Server errors: a database that stops answering gives a 503 page with Retry-After, not a bare 500."""

from unittest import mock

import pytest
from django.db import InterfaceError, OperationalError, transaction
from django.test import Client
from django.urls import reverse

from annotator.models import Annotation, Score
from annotator.rating.views import rating
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def annotator_client():
    client = Client(raise_request_exception=False)
    client.force_login(make_user("ann"))
    return client


@pytest.mark.parametrize(
    "error",
    [
        OperationalError("server closed the connection unexpectedly"),
        InterfaceError("connection already closed"),
    ],
)
def test_lost_database_is_503_with_retry_after(annotator_client, error):
    batch = make_batch("b", n_items=2)
    with mock.patch("annotator.rating.views.rating.rating_next", side_effect=error):
        response = annotator_client.get(reverse("annotate_next", args=[batch.pk]))
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert "database is not answering" in response.content.decode()
    assert "go back to the page you came from" in response.content.decode()  # how to send it again


def test_lost_database_is_the_503_page_with_debug_on_too(annotator_client, settings):
    """``make demo`` serves with DEBUG on: a database restart must not show Django's debug page."""
    settings.DEBUG = True
    batch = make_batch("b", n_items=2)
    error = OperationalError("server closed the connection unexpectedly")
    with mock.patch("annotator.rating.views.rating.rating_next", side_effect=error):
        response = annotator_client.get(reverse("annotate_next", args=[batch.pk]))
    page = response.content.decode()
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert "database is not answering" in page and "Traceback" not in page


def test_other_errors_keep_the_debug_page_with_debug_on(annotator_client, settings):
    settings.DEBUG = True
    batch = make_batch("b", n_items=2)
    with mock.patch("annotator.rating.views.rating.rating_next", side_effect=ValueError("bug")):
        response = annotator_client.get(reverse("annotate_next", args=[batch.pk]))
    assert response.status_code == 500 and "Traceback" in response.content.decode()


def test_a_submit_that_fails_on_the_database_saves_nothing_and_the_resubmit_saves_once(annotator_client):
    batch = make_batch("b", n_items=2)
    page = annotator_client.get(reverse("annotate_next", args=[batch.pk]))
    item = page.context["item"]
    form = {
        "score_coherence": "4",
        "score_relevance": "4",
        "score_instruction_following": "3",
        "score_safety_compliance": "5",
        "score_fluency": "4",
        "constraint_0": "met",
        "constraint_1": "met",
    }
    # The connection drops after everything is written, before the commit: all of it is rolled back.
    real_submit = rating.annotation_submit

    def submit_then_lose_the_connection(**kwargs):
        with transaction.atomic():
            real_submit(**kwargs)
            raise OperationalError("terminating connection due to administrator command")

    with mock.patch.object(rating, "annotation_submit", submit_then_lose_the_connection):
        failed = annotator_client.post(reverse("annotate_submit", args=[item.pk]), form)
    assert failed.status_code == 503 and not Annotation.objects.exists() and not Score.objects.exists()
    for _ in range(2):  # the user sends the form again, twice
        assert annotator_client.post(reverse("annotate_submit", args=[item.pk]), form).status_code == 302
    assert Annotation.objects.filter(item=item).count() == 1 and Score.objects.filter(item=item).count() == 5


def test_other_errors_stay_500(annotator_client):
    batch = make_batch("b", n_items=2)
    with mock.patch("annotator.rating.views.rating.rating_next", side_effect=ValueError("bug")):
        response = annotator_client.get(reverse("annotate_next", args=[batch.pk]))
    assert response.status_code == 500 and "Retry-After" not in response
    assert "Server error" in response.content.decode()
