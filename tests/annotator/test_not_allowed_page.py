"""A form's address opened by GET answers a page saying so (405), not an empty body; the API keeps problem details."""

import pytest
from django.urls import reverse

from tests.factories import make_batch, make_user


@pytest.mark.django_db
def test_a_get_of_a_post_only_address_is_a_page(client):
    batch = make_batch("forms", n_items=1)
    client.force_login(make_user("someone"))
    response = client.get(reverse("annotate_skip", args=[batch.items.get().pk]))
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert "This address is a form's, not a page" in response.content.decode()
    api = client.delete("/api/v1/me")
    assert api.status_code == 405 and api["Content-Type"] == "application/problem+json"
