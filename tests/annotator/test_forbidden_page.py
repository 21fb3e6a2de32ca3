"""A page refused to an account answers the site's 403 page: which role it needs, the account's own
roles and a way back; the API keeps its problem details."""

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db


def page_as(role: str, url: str):
    client = Client()
    client.force_login(make_user(f"{role}-user", role=role))
    response = client.get(url)
    assert response.status_code == 403
    return response.content.decode()


@pytest.mark.parametrize(
    ("role", "url_name", "needed", "has"),
    [
        ("annotator", "report_list", "researcher", "the annotator role."),
        ("annotator", "judges", "researcher", "the annotator role."),
        ("researcher", "upload", "admin", "the researcher role."),
        ("researcher", "studies", "admin", "the researcher role."),
        ("none", "annotate_queue", "annotator", "no role yet."),
    ],
)
def test_a_role_page_says_which_role_it_needs_with_the_site_around_it(role, url_name, needed, has):
    page = page_as(role, reverse(url_name))
    assert f"This page needs the {needed} role." in page
    assert f"ask an admin to give your account the {needed} role" in page
    assert f"Your account ({role}-user) has {has}" in page
    assert 'class="topbar"' in page and f'href="{reverse("home")}"' in page  # the site's frame, a way home
    assert "<h1>403 Forbidden</h1>" not in page


def test_the_report_of_a_batch_names_the_researcher_role():
    batch = make_batch("b", n_items=1)
    page = page_as("annotator", reverse("report_batch", args=[batch.pk]))
    assert "This page needs the researcher role. That role is for reports" in page


def test_adjudication_says_a_grant_would_do_too():
    batch = make_batch("b", n_items=2)
    page = page_as("annotator", reverse("adjudication_item", args=[batch.items.first().pk]))
    assert "needs the researcher role, or a researcher&#x27;s grant to adjudicate it" in page


def test_the_api_keeps_problem_details():
    client = Client()
    client.force_login(make_user("ann", role="annotator"))
    response = client.get("/api/v1/batches")
    assert response.status_code == 403 and response["Content-Type"] == "application/problem+json"
    assert "researcher role" in response.json()["detail"]


def test_the_handler_answers_problem_details_for_api_paths_too(rf):
    """A refusal under /api/ that the API's own handlers did not meet still is not an HTML page."""
    from django.core.exceptions import PermissionDenied

    from annotator.views.errors import permission_denied

    request = rf.get("/api/v1/somewhere")
    request.user = make_user("ann", role="annotator")
    response = permission_denied(request, PermissionDenied("No."))
    assert response.status_code == 403 and response["Content-Type"] == "application/problem+json"


def test_the_top_bar_links_studies_for_admins_only():
    """Studies was reachable only from the home page; it is in every page's top bar for admins."""
    studies = f'<a href="{reverse("studies")}">Studies</a>'
    admin, researcher = Client(), Client()
    admin.force_login(make_user("adm", role="admin"))
    researcher.force_login(make_user("res", role="researcher"))
    assert studies in admin.get(reverse("upload")).content.decode()
    assert studies not in researcher.get(reverse("report_list")).content.decode()
