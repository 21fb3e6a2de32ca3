"""The landing page and the rubric page."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_GET

from annotator.quality.selectors.adjudication import batches_to_adjudicate
from annotator.selectors.api_tokens import may_hold_api_tokens
from hcs.rubric import Rubric


@require_GET
@login_required
def home(request):
    return render(
        request,
        "annotator/home.html",
        {
            "adjudicate": batches_to_adjudicate(user=request.user),
            "api_tokens": may_hold_api_tokens(request.user),
        },
    )


@require_GET
@login_required
def rubric(request):
    return render(request, "annotator/rubric.html", {"rubric": Rubric.default()})


@require_GET
def favicon(request):
    """Browsers ask for /favicon.ico on pages without a link to the icon (raw exports)."""
    return redirect(static("favicon.svg"), permanent=True)
