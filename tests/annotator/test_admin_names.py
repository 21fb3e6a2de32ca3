"""The Django admin names every model in plain English: no "Batchs" or "bonuss"."""

import re

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", apps.get_app_config("annotator").get_models(), ids=lambda m: m.__name__)
def test_plural_names_are_english(model):
    singular, plural = str(model._meta.verbose_name), str(model._meta.verbose_name_plural)
    if re.search(r"(s|ch|sh|x)$", singular):
        assert plural == singular + "es", f"{model.__name__}: {plural!r}"
    assert "api " not in singular.lower() or "API" in singular  # an abbreviation stays capitalised


def test_admin_index_lists_batches(client):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    page = client.get(reverse("admin:index")).content.decode()
    assert "Batches" in page and "Batchs" not in page
