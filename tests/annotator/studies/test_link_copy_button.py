"""A link made on the Studies page is shown once: it comes with a Copy button for that very link."""

import re

import pytest
from django.urls import reverse

from tests.factories import make_batch

pytestmark = pytest.mark.django_db


def _copy_targets(html: str) -> dict[str, str]:
    """The text each Copy button copies, by the id its data-copy names."""
    codes = dict(re.findall(r'<code class="link-url" id="([^"]+)">([^<]+)</code>', html))
    return {
        target: codes.get(target, "") for target in re.findall(r'class="copy-code" data-copy="([^"]+)"', html)
    }


@pytest.mark.parametrize(
    ("view", "form"),
    [
        ("study_link_new", {"platform": "prolific", "quota": 3, "completion_code": "Y", "days": 10}),
        ("invite_link_new", {"uses": 2, "days": 7}),
    ],
)
def test_a_new_link_has_a_copy_button_for_its_url(client, admin_user, view, form):
    batch = make_batch("copy-me", n_items=2)
    client.force_login(admin_user)
    form = {**form, ("batches" if view == "invite_link_new" else "batch"): batch.pk}
    html = client.post(reverse(view), form).content.decode()
    targets = _copy_targets(html)
    assert len(targets) == 1, html
    (url,) = targets.values()
    assert url.startswith("http://") and ("/study/" in url or "/invite/" in url)
    assert "js/copy_code.js" in html


def test_the_page_without_a_new_link_has_no_copy_button(client, admin_user):
    client.force_login(admin_user)
    html = client.get(reverse("studies")).content.decode()
    assert "copy-code" not in html and "copy_code.js" not in html
