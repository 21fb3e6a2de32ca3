"""The API docs page in Chromium: Swagger UI renders every operation from the app's own files
(no request leaves the server), and a signed-in page's calls carry the CSRF token it was given."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from annotator.models import Batch
from tests.browser.conftest import signed_in_context
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CALL = """async ([withToken]) => {
  const headers = {"Content-Type": "application/json"};
  if (withToken) headers["X-CSRFToken"] = document.body.dataset.csrfToken;
  const body = JSON.stringify({name: withToken ? "from docs" : "forged", items: [{item_id: "a", prompt: "p", response: "r"}]});
  const response = await fetch("/api/v1/batches", {method: "POST", headers, body, credentials: "same-origin"});
  return [response.status, response.headers.get("content-type")];
}"""


def test_docs_page_renders_every_operation_offline(chromium, live_server):
    admin = make_user("docs-admin", role="admin")
    context = signed_in_context(chromium, live_server, admin)
    page = context.new_page()
    hosts = set()
    page.on("request", lambda request: hosts.add(urlsplit(request.url).netloc))
    page.goto(f"{live_server.url}/api/v1/docs")
    page.wait_for_selector(".opblock", timeout=20_000)
    summaries = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/v1/batches/{batch_id}/report" in " ".join(summaries).replace("\u200b", "")
    schema = page.request.get(f"{live_server.url}/api/v1/openapi.json").json()
    assert len(summaries) == sum(len(ops) for ops in schema["paths"].values()) == 31  # every operation
    assert hosts == {urlsplit(live_server.url).netloc}  # nothing from a CDN
    # The page's own calls: without the CSRF token a session POST is refused, with it it goes through.
    assert page.evaluate(CALL, [False]) == [403, "application/problem+json"]
    assert page.evaluate(CALL, [True])[0] == 201
    assert list(Batch.objects.values_list("name", flat=True)) == ["from docs"]
    context.close()
