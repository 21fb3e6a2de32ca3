"""Researcher report pages: roles, content, escaping, exports from the page."""

import json
import re

import pytest
from django.urls import reverse

from annotator.models import Item
from tests.factories import PASSWORD, make_annotation, make_batch, make_user

DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]
EVIL = '<script>alert("x")</script>'


@pytest.fixture
def batch(db):
    batch = make_batch("views", n_items=4, k=3, systems=("base", EVIL))
    users = [make_user(f"v{j}") for j in range(3)]
    for i, item in enumerate(Item.objects.filter(batch=batch).order_by("position")):
        for j, user in enumerate(users):
            make_annotation(item, user, dict.fromkeys(DIMS, 1 + (i + j * 2) % 5), comment=EVIL)
    return batch


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)


@pytest.mark.parametrize(
    "name, args",
    [
        ("report_list", []),
        ("report_batch", ["batch"]),
        ("report_export", ["batch", "json"]),
        ("report_item", ["item"]),
    ],
)
def test_annotators_get_403_and_anonymous_users_go_to_login(client, batch, annotator_user, name, args):
    item = Item.objects.filter(batch=batch).first()
    url = reverse(name, args=[{"batch": batch.pk, "item": item.pk}.get(a, a) for a in args])
    assert client.get(url).status_code == 302
    login(client, annotator_user)
    assert client.get(url).status_code == 403


def test_researcher_sees_list_and_report(client, batch, researcher_user):
    login(client, researcher_user)
    page = client.get(reverse("report_list")).content.decode()
    assert reverse("report_batch", args=[batch.pk]) in page
    response = client.get(reverse("report_batch", args=[batch.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    for text in [
        "Fleiss' κ",
        "α ordinal",
        "Gwet's AC2",
        "% agreement",
        "κ items used",
        "Widest disagreements",
        "<svg",
    ]:
        assert text in html
    assert EVIL not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    first_item = Item.objects.filter(batch=batch).order_by("position").first()
    assert reverse("report_item", args=[first_item.pk]) in html or "No disagreement" in html


def test_admin_may_read_reports(client, batch, admin_user):
    login(client, admin_user)
    assert client.get(reverse("report_batch", args=[batch.pk])).status_code == 200


def test_item_page_shows_every_annotation_escaped(client, batch, researcher_user):
    login(client, researcher_user)
    item = Item.objects.filter(batch=batch).order_by("position").first()
    html = client.get(reverse("report_item", args=[item.pk])).content.decode()
    assert html.count("&lt;script&gt;") >= 3 and EVIL not in html
    for j in range(3):
        assert f"v{j}" in html


def test_home_links_to_reports_for_researchers(client, researcher_user):
    login(client, researcher_user)
    assert reverse("report_list") in client.get(reverse("home")).content.decode()


def test_json_export_from_the_page(client, batch, researcher_user):
    login(client, researcher_user)
    response = client.get(reverse("report_export", args=[batch.pk, "json"]))
    assert response["Content-Type"] == "application/json"
    assert "attachment" in response["Content-Disposition"]
    data = json.loads(response.content)
    assert data["batch"] == "views" and data["k"] == 3 and data["n_annotations"] == 12
    assert set(data["dimensions"]) == set(DIMS)


def test_html_export_is_self_contained_and_escaped(client, batch, researcher_user):
    login(client, researcher_user)
    html = client.get(reverse("report_export", args=[batch.pk, "html"])).content.decode()
    assert "<style>" in html and "<svg" in html and "--accent" in html  # the app's CSS inlined
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert "<link" not in html and "<script" not in html.lower().replace("&lt;script", "")
    assert EVIL not in html


@pytest.mark.parametrize("fmt", ["dimensions.csv", "scores.csv", "annotations.csv"])
def test_csv_exports_from_the_page(client, batch, researcher_user, fmt):
    login(client, researcher_user)
    response = client.get(reverse("report_export", args=[batch.pk, fmt]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    body = b"".join(response.streaming_content if response.streaming else [response.content]).decode()
    assert body.count("\n") >= 2


def test_unknown_export_is_404(client, batch, researcher_user):
    login(client, researcher_user)
    assert client.get(reverse("report_export", args=[batch.pk, "xlsx"])).status_code == 404
    assert client.get(reverse("report_batch", args=[99999])).status_code == 404
