"""The public link pages: a crowd worker's study link, an invite, a one-time sign-in.

Each is rate-limited per client address. An unknown token is a 404, an expired, revoked or
used-up one a 403, a malformed worker id a 403; each with a page saying what to do.
"""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from annotator.models import Enrolment, InviteLink, SignInLink, StudyLink
from annotator.services.rate_limit import client_key, rate_limit_hit
from annotator.studies.crowd import (
    PLATFORMS,
    BadWorkerIds,
    UnfilledLink,
    fresh_worker_query,
    worker_ids_from_query,
)
from annotator.studies.forms import PasswordRuleErrorsOnThePassword, SignInPasswordForm
from annotator.studies.link_urls import base_of, new_worker_url
from annotator.studies.selectors import link_ending
from annotator.studies.services.links import (
    LinkError,
    StudyFull,
    crowd_enter,
    invite_redeem,
    link_find,
    signin_use,
)

BACKEND = "django.contrib.auth.backends.ModelBackend"


def _problem(request, message: str, status: int, heading: str = "", try_url: str = ""):
    context = {"message": message, "status": status, "heading": heading, "try_url": try_url}
    return render(request, "annotator/link_problem.html", context, status=status)


def rate_limited(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if rate_limit_hit(key=client_key(request)):
            response = _problem(
                request, "Too many attempts from your address. Wait a minute and try again.", 429
            )
            response["Retry-After"] = "60"
            return response
        return view(request, *args, **kwargs)

    return wrapped


def no_referrer(view):
    """The study link's query carries the worker's platform ids. A page answered at that address
    (a refusal, "study full") must not send it on as the Referer of the requests it makes (its
    styles, its links), or the ids reach other logs; the way in redirects to a clean address."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Referrer-Policy"] = "no-referrer"
        return response

    return wrapped


@require_GET
@never_cache
@no_referrer
@rate_limited
def study_entry(request, study_token):
    try:
        link = link_find(StudyLink, study_token)
        ids = worker_ids_from_query(PLATFORMS[link.platform], request.GET)
        enrolment = crowd_enter(link=link, ids=ids)
    except UnfilledLink as exc:
        # A development server offers the demo's new-worker link, which fills in all three ids afresh.
        try_url = new_worker_url(study_token, base_of(request)) if settings.DEBUG else ""
        heading = f"This link opens from {exc.platform.name or 'the platform'}"
        return _problem(request, str(exc), 403, heading=heading, try_url=try_url)
    except BadWorkerIds as exc:
        return _problem(request, str(exc), 403)
    except StudyFull as exc:
        return render(
            request, "annotator/study_full.html", {"ending": link_ending(exc.link, Enrolment.End.FULL)}
        )
    except LinkError as exc:
        return _problem(request, str(exc), exc.status)
    if request.user.pk != enrolment.user_id:
        # Only when it changes who is signed in: login() rotates the CSRF token, which would void the
        # forms open in the worker's other tabs when they open the link again (a double click).
        login(request, enrolment.user, backend=BACKEND)
    return redirect("annotate_next", batch_id=enrolment.batch_id)


DEMO_STUDY_ID = "demo-study"


@require_GET
@never_cache
@rate_limited
def study_new_worker(request, study_token):
    """The demo's "try it as a worker" link (DEBUG only): the study link as the platform fills it in for
    a participant seen for the first time, so each visit is a new worker. A participant id typed into
    the link keeps its session id (a Prolific session belongs to one participant), which made the demo's
    one printed link a refusal for every worker after the first."""
    if not settings.DEBUG:
        raise Http404("Only in a development (DEBUG) server.")
    try:
        link = link_find(StudyLink, study_token)
    except LinkError as exc:
        return _problem(request, str(exc), exc.status)
    query = fresh_worker_query(PLATFORMS[link.platform], DEMO_STUDY_ID)
    return redirect(reverse("study_entry", args=[study_token]) + "?" + query)


class InviteForm(PasswordRuleErrorsOnThePassword, UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username",)


def _account_page(request, *, model, token, form_for, use, template, context_for):
    """A link page whose form makes or finishes an account, then signs it in (invite, sign-in).

    ``use(token, cleaned_data)`` spends the link; a LinkError of status 400 is the form's fault
    (shown on the form), any other ends on the problem page.
    """
    try:
        link = link_find(model, token)
    except LinkError as exc:
        return _problem(request, str(exc), exc.status)
    if request.user.is_authenticated:  # the link is for someone without an account here: never a second one
        context = {"form": None, "signed_in_as": request.user, **context_for(link)}
        return render(request, template, context, status=409 if request.method == "POST" else 200)
    form = form_for(link, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = use(token, form.cleaned_data)
        except LinkError as exc:
            if exc.status != 400:
                return _problem(request, str(exc), exc.status)
            form.add_error(None, str(exc))
        else:
            login(request, user, backend=BACKEND)
            return redirect("annotate_queue")
    status = 422 if request.method == "POST" else 200
    return render(request, template, {"form": form, **context_for(link)}, status=status)


@require_http_methods(["GET", "POST"])
@never_cache
@rate_limited
def invite(request, invite_token):
    return _account_page(
        request,
        model=InviteLink,
        token=invite_token,
        form_for=lambda link, data: InviteForm(data),
        use=lambda token, data: invite_redeem(
            token=token, username=data["username"], password=data["password1"]
        ),
        template="annotator/invite.html",
        context_for=lambda link: {"batches": link.batches.order_by("name")},
    )


@require_http_methods(["GET", "POST"])
@never_cache
@rate_limited
def signin(request, signin_token):
    return _account_page(
        request,
        model=SignInLink,
        token=signin_token,
        form_for=lambda link, data: SignInPasswordForm(link.user, data),
        use=lambda token, data: signin_use(token=token, password=data["new_password1"]),
        template="annotator/signin_link.html",
        context_for=lambda link: {"account": link.user},
    )
