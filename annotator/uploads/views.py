"""The admins' upload page: batch files and offline annotations, previewed before anything is saved.

The uploaded file waits on disk under a random token tied to the admin's session between the
preview and the confirm step; confirm reads it again and runs the same checks inside the
transaction that saves it.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.models import Job
from annotator.models.batch import MIN_K
from annotator.roles import admin_required
from annotator.selectors.jobs import job_of, upload_confirmed_job
from annotator.services.jobs import upload_job_create
from annotator.uploads.files.errors import FileRefused, ImportRefused
from annotator.uploads.files.file_size import upload_limit
from annotator.uploads.files.store import UploadStore
from annotator.uploads.forms import ANNOTATIONS, BATCH, UploadForm
from annotator.uploads.memory import releases_memory
from annotator.uploads.selectors.plans import batch_names
from annotator.uploads.selectors.preview import pending_upload_preview
from annotator.uploads.services.confirm import confirm_key, upload_confirm_save

SESSION_KEY = "pending_uploads"
MAX_PENDING = 5
TEMPLATE_CSV = settings.BASE_DIR / "templates" / "annotation_template.csv"


def _store() -> UploadStore:
    return UploadStore()


def _page(request, form: UploadForm | None = None, status: int = 200):
    again = request.GET  # "Upload another file" keeps the name and k of the last preview
    forms = {}
    for mode in (BATCH, ANNOTATIONS):
        initial = {"mode": mode, "k": MIN_K if mode == BATCH else None}
        if again.get("mode") == mode:
            initial.update({key: again[key] for key in ("name", "k") if again.get(key)})
        forms[mode] = UploadForm(initial=initial, auto_id=f"{mode}_%s")
    if form is not None:
        forms[ANNOTATIONS if form.data.get("mode") == ANNOTATIONS else BATCH] = form
    forms[ANNOTATIONS].fields["name"].widget.attrs["list"] = "batch-names"  # offline annotations join a batch
    context = {
        "batch_form": forms[BATCH],
        "annotation_form": forms[ANNOTATIONS],
        "max_bytes": upload_limit(),
        "batch_names": batch_names(),
        "saved": _saved_job(request),
    }
    return render(request, "annotator/upload.html", context, status=status)


def _saved_job(request) -> Job | None:
    """The admin's own done upload named by ``?saved=`` (the redirect after a confirm), or None."""
    try:
        job = job_of(user=request.user, job_id=request.GET.get("saved", ""))
    except (Http404, ValidationError, ValueError):
        return None
    return job if job.kind == Job.UPLOAD and job.state == Job.DONE else None


def _preview(pending: dict, data: bytes):
    return pending_upload_preview(pending=pending, data=data)


@require_GET
@admin_required
def upload(request):
    return _page(request)


@releases_memory  # the parsed file: a worker that served one upload would keep its heap
@require_POST
@admin_required
def preview(request):
    mode = ANNOTATIONS if request.POST.get("mode") == ANNOTATIONS else BATCH
    form = UploadForm(request.POST, request.FILES, auto_id=f"{mode}_%s")
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data["file"].read()
    rubric = form.cleaned_data["rubric_file"]
    pending = {
        "mode": form.cleaned_data["mode"],
        "filename": form.cleaned_data["file"].name,
        "name": form.cleaned_data["name"],
        "k": form.cleaned_data["k"],
        "rubric": rubric.to_dict() if rubric else None,
    }
    try:
        result = _preview(pending, data)
    except FileRefused as exc:
        form.add_error("file", str(exc))
        return _page(request, form, status=400)
    token = _remember(request, data, pending) if result.ok else ""
    return render(
        request,
        "annotator/upload_preview.html",
        {"preview": result, "token": token, "again_query": _again_query(pending)},
    )


@releases_memory
@require_POST
@admin_required
def confirm(request):
    token = request.POST.get("token", "")
    earlier = upload_confirmed_job(user=request.user, key=confirm_key(token)) if token else None
    if earlier is not None:  # confirmed before, and the reply was lost: say what became of it
        _forget(request, token)
        if earlier.state != Job.DONE:
            return redirect("job_status", job_id=earlier.pk)
        messages.success(
            request, f"This upload was already saved when you first confirmed it: {earlier.message}"
        )
        return _saved_page(earlier)
    pending = request.session.get(SESSION_KEY, {}).get(token)
    data = _store().load(token) if pending else None
    if data is None:
        messages.error(request, "This upload is no longer waiting for confirmation; upload the file again.")
        return redirect("upload")
    if len(data) > settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES:  # a large file: the worker saves it
        job = upload_job_create(pending=pending, data=data, user=request.user, confirm_key=confirm_key(token))
        _forget(request, token)
        return redirect("job_status", job_id=job.pk)
    try:
        saved = upload_confirm_save(token=token, pending=pending, data=data, user=request.user)
    except (FileRefused, ImportRefused):
        _forget(request, token)
        return render(
            request,
            "annotator/upload_preview.html",
            {"preview": _preview(pending, data), "token": "", "again_query": _again_query(pending)},
            status=400,
        )
    _forget(request, token)
    messages.success(request, saved.message)
    return _saved_page(saved)


@require_POST
@admin_required
def cancel(request):
    _forget(request, request.POST.get("token", ""))
    messages.info(request, "Upload cancelled; nothing was saved.")
    return redirect("upload")


@require_GET
@login_required
def annotation_template(request):
    return FileResponse(
        TEMPLATE_CSV.open("rb"),
        as_attachment=True,
        filename="annotation_template.csv",
        content_type="text/csv; charset=utf-8",
    )


def _saved_page(job: Job):
    """The upload page, with the links of the batch the upload went into (its report, its assignment
    and a new study link for it)."""
    return redirect(f"{reverse('upload')}?{urlencode({'saved': job.pk})}")


def _again_query(pending: dict) -> str:
    return urlencode({key: pending[key] for key in ("mode", "name", "k") if pending.get(key) is not None})


def _remember(request, data: bytes, pending: dict) -> str:
    """Keep the file for the confirm step; an admin has at most MAX_PENDING files waiting."""
    waiting = request.session.setdefault(SESSION_KEY, {})
    for old in list(waiting)[: max(0, len(waiting) - MAX_PENDING + 1)]:
        _forget(request, old)
    token = _store().save(data)
    waiting[token] = pending
    request.session.modified = True
    return token


def _forget(request, token: str) -> None:
    _store().delete(token)
    if request.session.get(SESSION_KEY, {}).pop(token, None) is not None:
        request.session.modified = True
