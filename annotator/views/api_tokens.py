"""A signed-in user's API tokens: make one (its key is shown once), list them, revoke one."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotator.forms.api_tokens import ApiTokenForm
from annotator.selectors.api_tokens import api_tokens_of, may_hold_api_tokens
from annotator.services.api_tokens import api_token_create, api_token_revoke


def _accounts_an_admin_made(view):
    """Link-made accounts (crowd, invite, bulk) reach only their batches' rating pages: no API tokens."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not may_hold_api_tokens(request.user):
            raise PermissionDenied("Accounts made by a study or invite link cannot hold API tokens.")
        return view(request, *args, **kwargs)

    return wrapped


def _page(request, form=None, new_key: str = "", status: int = 200):
    context = {
        "form": form or ApiTokenForm(),
        "tokens": api_tokens_of(user=request.user),
        "new_key": new_key,
        "rate": settings.ANNOTATOR_API_RATE,
    }
    return render(request, "annotator/api_tokens.html", context, status=status)


@require_GET
@login_required
@_accounts_an_admin_made
@never_cache
def api_tokens(request):
    return _page(request)


@require_POST
@login_required
@_accounts_an_admin_made
@never_cache
def api_token_new(request):
    form = ApiTokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    _, key = api_token_create(
        user=request.user, name=form.cleaned_data["name"], days=form.cleaned_data["days"]
    )
    return _page(request, new_key=key, status=201)  # the key is in this response only


@require_POST
@login_required
def api_token_revoke_view(request, token_id):
    token = get_object_or_404(api_tokens_of(user=request.user), pk=token_id)
    api_token_revoke(token=token)
    messages.success(request, f"Token \u201c{token.name}\u201d ({token.prefix}\u2026) is revoked.")
    return redirect("api_tokens")
