"""The landing page and the rubric page."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from hcs.rubric import Rubric


@require_GET
@login_required
def home(request):
    return render(request, "annotator/home.html", {})


@require_GET
@login_required
def rubric(request):
    return render(request, "annotator/rubric.html", {"rubric": Rubric.default()})
