"""The admins' Studies page: make and revoke study and invite links, add annotators in bulk,
set a batch's consent text, instructions and limits, and download the payment CSV."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from annotator.counted import counted
from annotator.models import Batch, InviteLink, StudyLink
from annotator.quality.selectors.standing import quality_rule_of
from annotator.quality.services.gold import quality_rule_set
from annotator.reports.exports.csv_safe import csv_lines
from annotator.roles import admin_required
from annotator.studies.crowd import PLATFORMS
from annotator.studies.forms import (
    AnnotatorListForm,
    InviteLinkForm,
    QualityRuleForm,
    StudyLinkForm,
    StudySettingsForm,
)
from annotator.studies.link_urls import base_of, invite_url, signin_url, study_url
from annotator.studies.prolific.forms import ProlificReviewForm
from annotator.studies.selectors import (
    FULL_WARNING,
    PAYMENT_HEADER,
    batch_has_free_slot,
    links_overview,
    payment_rows,
)
from annotator.studies.services.links import (
    LinkError,
    annotators_add,
    invite_create,
    link_revoke,
    study_link_create,
)
from annotator.uploads.files.annotator_list import AnnotatorListError, parse_annotator_list

LINK_KINDS = {"study": StudyLink, "invite": InviteLink}


def _page(request, status=200, settings_form=None, quality_form=None, **extra):
    batches = list(Batch.objects.select_related("quality_rule").order_by("name"))
    forms = [
        (
            b,
            settings_form
            if settings_form is not None and settings_form.instance.pk == b.pk
            else StudySettingsForm(instance=b),
            quality_form
            if quality_form is not None and quality_form.batch.pk == b.pk
            else QualityRuleForm(instance=getattr(b, "quality_rule", None), batch=b),
        )
        for b in batches
    ]
    context = {
        **links_overview(),
        "settings_forms": forms,
        "study_form": StudyLinkForm(),
        "invite_form": InviteLinkForm(),
        "bulk_form": AnnotatorListForm(),
        "prolific_form": ProlificReviewForm(),
        **extra,
    }
    return render(request, "annotator/studies.html", context, status=status)


@require_GET
@admin_required
def studies(request):
    # ?batch= (the link after an upload is saved): the new study link's form starts on that batch.
    batch = request.GET.get("batch", "")
    return _page(
        request, study_form=StudyLinkForm(initial={"batch": int(batch)} if batch.isdecimal() else None)
    )


@require_POST
@admin_required
def study_link_new(request):
    form = StudyLinkForm(request.POST)
    if not form.is_valid():
        return _page(request, status=422, study_form=form)
    try:
        link, token = study_link_create(created_by=request.user, **form.cleaned_data)
    except LinkError as exc:
        form.add_error(None, str(exc))
        return _page(request, status=422, study_form=form)
    if not batch_has_free_slot(batch=link.batch):
        messages.warning(request, FULL_WARNING.format(batch=link.batch.name))
    what = f"{PLATFORMS[link.platform].label} study link for {link.batch}"
    made = {"what": what, "urls": [study_url(token, link.platform, base_of(request))]}
    return _page(request, made=made)


@require_POST
@admin_required
def invite_link_new(request):
    form = InviteLinkForm(request.POST)
    if not form.is_valid():
        return _page(request, status=422, invite_form=form)
    invite, token = invite_create(created_by=request.user, **form.cleaned_data)
    made = {
        "what": f"Invite link (up to {counted(invite.max_uses, 'account', 'accounts')})",
        "urls": [invite_url(token, base_of(request))],
    }
    return _page(request, made=made)


@require_POST
@admin_required
def annotators_new(request):
    form = AnnotatorListForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, status=422, bulk_form=form)
    try:
        rows = parse_annotator_list(form.cleaned_data["file"].read())
        accounts = annotators_add(
            rows=rows,
            batch=form.cleaned_data["batch"],
            days=form.cleaned_data["days"],
            created_by=request.user,
        )
    except AnnotatorListError as exc:
        return _page(request, status=422, bulk_form=form, bulk_errors=exc.errors)
    except LinkError as exc:
        return _page(request, status=422, bulk_form=form, bulk_errors=[str(exc)])
    base = base_of(request)
    made = {
        "what": f"{counted(len(accounts), 'account', 'accounts')} for {form.cleaned_data['batch']}: "
        + ("a one-time sign-in link" if len(accounts) == 1 else "one-time sign-in links"),
        "accounts": [(a.username, a.email, signin_url(a.token, base)) for a in accounts],
    }
    return _page(request, made=made)


@require_POST
@admin_required
def link_revoke_view(request, kind, link_id):
    model = LINK_KINDS.get(kind)
    if model is None:
        raise Http404("No such kind of link.")
    link = link_revoke(link=get_object_or_404(model, pk=link_id))
    messages.success(request, f"Revoked {kind} link {link.pk}: it no longer opens.")
    return redirect("studies")


@require_POST
@admin_required
def study_settings(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    form = StudySettingsForm(request.POST, instance=batch)
    if not form.is_valid():
        messages.error(request, f"The study settings of {batch} were not saved: see the form below.")
        return _page(request, status=422, settings_form=form)
    form.save()
    messages.success(request, f"Saved the study settings of {batch}.")
    return redirect("studies")


@require_POST
@admin_required
def study_quality(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    form = QualityRuleForm(request.POST, instance=quality_rule_of(batch=batch), batch=batch)
    if not form.is_valid():
        # Said at the top too: the form is far down the page, and the page opens at its top.
        messages.error(request, f"The training and checks of {batch} were not saved: see the form below.")
        return _page(request, status=422, quality_form=form)
    quality_rule_set(batch=batch, values=form.cleaned_data)
    messages.success(request, f"Saved the training and checks of {batch}.")
    return redirect("studies")


@require_GET
@admin_required
def payments_csv(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    response = HttpResponse(
        csv_lines(PAYMENT_HEADER, payment_rows(batch=batch)), content_type="text/csv; charset=utf-8"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="workers-batch{batch.pk}-{stamp}.csv"'
    return response
