"""The API object: routers, authentication, the rate limit and problem-details errors.

django-ninja builds the OpenAPI schema (``/api/v1/openapi.json``) and the docs page
(``/api/v1/docs``, Swagger UI served from this app's static files) from the typed operations.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.views.decorators.http import require_GET
from ninja import NinjaAPI
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder

from annotator.api import annotations, batches, jobs, me, reports
from annotator.api.auth import TokenRateThrottle, signed_in
from annotator.api.parser import StrictJsonParser
from annotator.api.problems import MEDIA_TYPE, install_handlers
from annotator.judges.api import calibration_sets, judges
from annotator.judges.api import review as judge_review
from annotator.judges.api import tables as judge_data
from annotator.streams import api as streams

DESCRIPTION = """
Push model outputs to human annotation and read agreement and judge calibration back.

**Authentication.** Send a personal API token as `Authorization: Bearer <token>` (make one on the
*API tokens* page or with `python manage.py api_token USER --days N`). A token acts with exactly its
user's role. From this page, your signed-in session works too.

**Errors** are problem details (RFC 9457, `application/problem+json`); bad items are listed in
`errors` with their `row` (the item's 1-based position in `items`, or its line in `jsonl`).
**Lists** are cursor-paginated: follow `next` until it is null. **Large jobs** answer
`202 Accepted` with a job to poll (`Location`, `url`) until its `state` is `done`, then read `result_url`.
"""


class _Encoder(NinjaJSONEncoder):
    """Times in full ISO 8601 (Django's encoder cuts them to milliseconds; a cursor and the CSV keep
    microseconds, and a notebook joining the two needs the same values)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, dt.datetime):
            return o.isoformat()
        return super().default(o)


class Renderer(JSONRenderer):
    encoder_class = _Encoder
    json_dumps_params = {"allow_nan": False}  # noqa: RUF012 (ninja's attribute); null, never NaN


class Api(NinjaAPI):
    def get_openapi_schema(self, **kwargs):
        """The schema, with error responses under the media type they are sent as (problem+json)."""
        schema = super().get_openapi_schema(**kwargs)
        for operations in schema["paths"].values():
            for operation in operations.values():
                for status, answer in operation.get("responses", {}).items():
                    if str(status).startswith(("4", "5")) and "application/json" in answer.get("content", {}):
                        answer["content"] = {MEDIA_TYPE: answer["content"].pop("application/json")}
        return schema


api = Api(
    title="HCS annotator API",
    version="1",
    description=DESCRIPTION,
    urls_namespace="api-v1",
    auth=signed_in,
    throttle=[TokenRateThrottle()],
    docs_url="/docs",
    openapi_url="/openapi.json",
    renderer=Renderer(),
    parser=StrictJsonParser(),
    docs_decorator=require_GET,  # the schema and the docs page only read
)
install_handlers(api)
for module in (
    me,
    batches,
    annotations,
    reports,
    judges,
    judge_data,
    calibration_sets,
    jobs,
    judge_review,
    streams,
):
    api.add_router("", module.router)
