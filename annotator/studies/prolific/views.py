"""Prolific on the web: the review form of the Studies page, and the webhook Prolific calls."""

from __future__ import annotations

import json
import time

from django.conf import settings
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotator.roles import admin_required
from annotator.studies.prolific import client as api
from annotator.studies.prolific.forms import ProlificReviewForm
from annotator.studies.prolific.services.review import ReviewError
from annotator.studies.prolific.services.run import prolific_review_run
from annotator.studies.prolific.services.webhook import (
    event_id_of,
    signature_valid,
    timestamp_fresh,
    webhook_event_handle,
)
from annotator.studies.views.admin import _page

MAX_WEBHOOK_BYTES = 64 * 1024


def client_factory() -> api.ProlificClient:
    """The client the page uses; tests swap in one with a local fake of Prolific behind it."""
    return api.ProlificClient()


@require_POST
@admin_required
def prolific_review(request):
    form = ProlificReviewForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, status=422, prolific_form=form)
    data = form.cleaned_data
    try:
        with client_factory() as client:
            outcome = prolific_review_run(
                batch=data["batch"],
                study_id=data["study_id"],
                client=client,
                approve=data["approve"],
                reject_failed_checks=data["reject_failed_checks"],
                bonus_per_item=data["bonus_per_item"],
                bonus_rows=data["bonus_csv"],
                dry_run=data["dry_run"],
                max_rejection_rate=data["max_rejection_rate"],
            )
    except (api.ProlificError, ReviewError) as exc:
        form.add_error(None, str(exc))
        return _page(request, status=502 if isinstance(exc, api.ProlificError) else 422, prolific_form=form)
    result = {"lines": outcome.lines, "ok": outcome.ok, "dry_run": data["dry_run"], "batch": data["batch"]}
    return _page(request, prolific_form=form, prolific_result=result)


@csrf_exempt  # Prolific cannot send a CSRF token; the HMAC signature is the credential.
@require_POST
def prolific_webhook(request):
    body = request.body[: MAX_WEBHOOK_BYTES + 1]
    timestamp = request.headers.get("X-Prolific-Request-Timestamp", "")
    signature = request.headers.get("X-Prolific-Request-Signature", "")
    if not settings.PROLIFIC_WEBHOOK_SECRET:
        return JsonResponse({"error": "PROLIFIC_WEBHOOK_SECRET is not set on this server."}, status=401)
    if not signature_valid(
        secret=settings.PROLIFIC_WEBHOOK_SECRET, timestamp=timestamp, body=body, signature=signature
    ):
        return JsonResponse(
            {"error": "The X-Prolific-Request-Signature does not match this request."}, status=401
        )
    if not timestamp_fresh(timestamp, now=time.time(), max_age_s=settings.PROLIFIC_WEBHOOK_MAX_AGE_S):
        return JsonResponse(
            {
                "error": "The X-Prolific-Request-Timestamp is not within "
                f"{settings.PROLIFIC_WEBHOOK_MAX_AGE_S} seconds of this server's clock; "
                "an old delivery is not accepted again."
            },
            status=401,
        )
    if len(body) > MAX_WEBHOOK_BYTES:
        return JsonResponse({"error": "The request body is too large."}, status=413)
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return JsonResponse({"error": "The body is not JSON."}, status=400)
    if not isinstance(payload, dict):
        return JsonResponse({"error": "The body is not a JSON object."}, status=400)
    handled = webhook_event_handle(
        event_id=event_id_of(payload, timestamp=timestamp, body=body), payload=payload
    )
    return JsonResponse({"ok": True, "duplicate": handled.duplicate, "leases_released": handled.released})
