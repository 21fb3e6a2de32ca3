"""The Studies page says where training and attention checks are set: the batch's quality rule in
the Django admin, which nothing on the page named before."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import QualityRule
from tests.factories import PASSWORD, make_batch

pytestmark = pytest.mark.django_db


def test_each_batch_names_its_checks_and_links_to_its_quality_rule(admin_user):
    admin_user.is_superuser = True  # as create_demo_users and createsuperuser make admins
    admin_user.save()
    ruled = make_batch("ruled", n_items=2)
    rule = QualityRule.objects.create(batch=ruled, training_items=2, check_every=4)
    bare = make_batch("bare", n_items=2)
    client = Client()
    client.login(username=admin_user.username, password=PASSWORD)
    html = client.get(reverse("studies")).content.decode()
    change = reverse("admin:annotator_qualityrule_change", args=[rule.pk])
    assert f'href="{change}"' in html
    assert "2 training items first, then one check in every 4 items" in html
    add = reverse("admin:annotator_qualityrule_add") + f"?batch={bare.pk}"
    assert f'href="{add}"' in html
    # both links open for the admin, the second with the batch chosen
    assert client.get(change).status_code == 200
    form = client.get(add).content.decode()
    assert f'<option value="{bare.pk}" selected>' in form
