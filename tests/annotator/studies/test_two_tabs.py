"""Crowd workers double-click and reopen links: a second tab must not void the first tab's forms,
and a form that did go out of date sends the worker back to their step with a sentence, never
Django's bare CSRF 403 page."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import Annotation, Assignment, Enrolment
from tests.annotator.study_support import PID_A, PID_B, RATING, entry_url, prolific_link
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    batch = make_batch("two-tabs", n_items=4)
    batch.consent_text = "Do you agree?"
    batch.save()
    _link, token = prolific_link(batch, quota=2)
    return batch, token


def form_token(response) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.content.decode()).group(1)


def browser() -> Client:
    return Client(enforce_csrf_checks=True)


def test_opening_the_link_in_a_second_tab_keeps_the_first_tabs_consent_form_working(study):
    batch, token = study
    client = browser()
    first_tab = client.get(client.get(entry_url(token, PID_A), follow=True).redirect_chain[-1][0])
    assert first_tab.status_code == 200 and "Do you agree?" in first_tab.content.decode()
    cookie_before = client.cookies["csrftoken"].value
    client.get(entry_url(token, PID_A), follow=True)  # the second tab (or a double click)
    assert client.cookies["csrftoken"].value == cookie_before
    response = client.post(
        reverse("study_consent", args=[batch.pk]),
        {"decision": "accept", "csrfmiddlewaretoken": form_token(first_tab)},
    )
    assert response.status_code == 302 and response["Location"] == reverse("annotate_next", args=[batch.pk])
    assert Enrolment.objects.get(worker_id=PID_A).consented_at is not None


def out_of_date_consent(study):
    """A consent form whose token was voided: another worker signed in in this browser meanwhile."""
    batch, token = study
    client = browser()
    page = client.get(entry_url(token, PID_A), follow=True)
    stale = form_token(page)
    client.get(entry_url(token, PID_B), follow=True)  # a different id: a different account signs in
    return client, stale


def test_an_out_of_date_consent_form_goes_back_to_the_step_with_a_sentence(study):
    batch, _token = study
    client, stale = out_of_date_consent(study)
    response = client.post(
        reverse("study_consent", args=[batch.pk]), {"decision": "accept", "csrfmiddlewaretoken": stale}
    )
    assert response.status_code == 302 and response["Location"] == reverse("annotate_next", args=[batch.pk])
    page = client.get(response["Location"], follow=True)
    html = page.content.decode()
    assert page.status_code == 200 and "CSRF verification failed" not in html
    assert "gone out of date" in html and "nothing was saved" in html and "Do you agree?" in html
    assert Enrolment.objects.get(worker_id=PID_B).consented_at is None


def test_an_out_of_date_rating_keeps_the_item_for_the_worker_and_says_so(study):
    batch, token = study
    client = browser()
    client.get(entry_url(token, PID_A), follow=True)
    token = client.cookies["csrftoken"].value
    client.post(
        reverse("study_consent", args=[batch.pk]), {"decision": "accept", "csrfmiddlewaretoken": token}
    )
    client.post(reverse("study_instructions", args=[batch.pk]), {"csrfmiddlewaretoken": token})
    rating_page = client.get(reverse("annotate_next", args=[batch.pk]))
    item = rating_page.context["item"]
    client.cookies["csrftoken"] = "x" * 32  # the token the page carries no longer matches
    for htmx in (False, True):
        headers = {"HX-Request": "true"} if htmx else {}
        response = client.post(
            reverse("annotate_submit", args=[item.pk]),
            {**RATING, "csrfmiddlewaretoken": form_token(rating_page)},
            headers=headers,
        )
        target = reverse("annotate_next", args=[batch.pk])
        if htmx:
            assert response["HX-Redirect"] == target
        else:
            assert response.status_code == 302 and response["Location"] == target
    assert not Annotation.objects.exists()
    again = client.get(target)
    assert again.context["item"] == item  # still held for them
    assert "gone out of date" in again.content.decode()
    assert Assignment.objects.filter(item=item, state=Assignment.State.LEASED).count() == 1


def test_an_out_of_date_form_elsewhere_is_a_page_saying_what_to_do():
    user = make_user("ann", role="annotator")
    client = browser()
    client.force_login(user)
    client.get(reverse("home"))
    response = client.post(reverse("logout"), {"csrfmiddlewaretoken": "y" * 32})
    html = response.content.decode()
    assert (
        response.status_code == 403 and "gone out of date" in html and "CSRF verification failed" not in html
    )
    anonymous = browser().post(reverse("login"), {"username": "ann", "password": "x"})
    assert anonymous.status_code == 403 and "Open the page again" in anonymous.content.decode()


def test_an_out_of_date_form_at_an_address_no_item_has_is_the_page_not_an_error():
    client = browser()
    client.force_login(make_user("ann", role="annotator"))
    for pk in ("999999", "9" * 30):
        response = client.post(f"/annotate/item/{pk}/submit/", {"csrfmiddlewaretoken": "z" * 32})
        assert response.status_code == 403 and "gone out of date" in response.content.decode()
