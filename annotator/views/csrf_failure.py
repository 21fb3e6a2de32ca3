"""The page for a form whose CSRF token no longer matches the browser's (``CSRF_FAILURE_VIEW``).

This happens to honest people: a form left open in one tab while they signed in, or signed in
again, in another. On the rating and study pages the person is sent back to where they stand in
the batch with a sentence saying nothing was saved (the lease keeps their item for them); elsewhere
a page says to reload and send the form again. Never Django's bare 403 page.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django_htmx.http import HttpResponseClientRedirect

from annotator.models import GoldAnswer, Item

OUT_OF_DATE = (
    "That page had gone out of date (it was opened before you signed in again, perhaps in another tab), "
    "so nothing was saved. This is where you are now: please do it again."
)
BATCH_KWARG = {
    "study_consent": "batch_id",
    "study_instructions": "batch_id",
    "annotate_next": "batch_id",
    "annotate_submit": "item_pk",
    "annotate_skip": "item_pk",
    "gold_submit": "answer_pk",
    "gold_skip": "answer_pk",
}


def _batch_id(url_name: str, kwargs: dict) -> int | None:
    """The batch a rating or study form belongs to, read without trusting that the person may see it
    (``annotate_next`` checks that)."""
    key = BATCH_KWARG.get(url_name)
    value = kwargs.get(key)
    if value is None:
        return None
    if key == "batch_id":
        return value
    model, field = (Item, "batch_id") if key == "item_pk" else (GoldAnswer, "gold_item__batch_id")
    try:
        return model.objects.filter(pk=value).values_list(field, flat=True).first()
    except OverflowError:  # a number no key can be (SQLite refuses it): no such form
        return None


def csrf_failure(request, reason: str = "") -> HttpResponse:
    try:
        match = resolve(request.path_info)
    except Resolver404:
        match = None
    batch_id = None
    if match is not None and request.user.is_authenticated:
        batch_id = _batch_id(match.url_name or "", match.kwargs)
    if batch_id is not None:
        messages.warning(request, OUT_OF_DATE)
        url = reverse("annotate_next", args=[batch_id])
        if request.headers.get("HX-Request"):
            return HttpResponseClientRedirect(url)
        return redirect(url)
    return render(request, "403_csrf.html", {"path": request.path}, status=403)
