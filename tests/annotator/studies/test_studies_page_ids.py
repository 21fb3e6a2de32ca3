"""The Studies page shows many forms at once (three link forms, the Prolific review, one settings form
per batch): no two elements share an id, so each label focuses its own field."""

import re
from collections import Counter

import pytest
from django.urls import reverse

from tests.factories import make_batch

pytestmark = pytest.mark.django_db


def test_every_id_on_the_studies_page_is_unique_and_every_label_names_one(client, admin_user):
    make_batch("first", n_items=2)
    make_batch("second", n_items=2)
    client.force_login(admin_user)
    html = client.get(reverse("studies")).content.decode()
    ids = Counter(re.findall(r'\sid="([^"]+)"', html))
    assert [i for i, n in ids.items() if n > 1] == []
    labelled = re.findall(r'<label for="([^"]+)"', html)
    assert labelled and set(labelled) <= set(ids)
    assert ">Completion URL:</label>" in html


def test_a_refused_study_link_form_keeps_its_own_ids(client, admin_user):
    make_batch("first", n_items=2)
    client.force_login(admin_user)
    html = client.post(reverse("study_link_new"), {"platform": "prolific", "quota": 0}).content.decode()
    assert 'id="study_quota"' in html and 'id="id_quota"' not in html
