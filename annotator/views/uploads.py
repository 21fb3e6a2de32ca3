"""The admins' upload page: batch files and offline annotations, previewed before anything is saved.

The uploaded file waits on disk under a random token tied to the admin's session between the
preview and the confirm step; confirm reads it again and runs the same checks inside the
transaction that saves it.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.forms.uploads import ANNOTATIONS, BATCH, UploadForm
from annotator.imports.errors import FileRefused, ImportRefused
from annotator.imports.store import UploadStore
from annotator.roles import admin_required
from annotator.selectors.imports import annotation_upload_preview, batch_upload_preview
from annotator.services.annotation_imports import annotations_import_file
from annotator.services.batches import batch_import_file
from hcs.rubric import Rubric

SESSION_KEY = "pending_uploads"
MAX_PENDING = 5
TEMPLATE_CSV = settings.BASE_DIR / "templates" / "annotation_template.csv"


def _store() -> UploadStore:
    return UploadStore(settings.ANNOTATOR_UPLOAD_DIR)


def _page(request, form: UploadForm | None = None, status: int = 200):
    forms = {mode: UploadForm(initial={"mode": mode, "k": 3 if mode == BATCH else None}, auto_id=f"{mode}_%s")
             for mode in (BATCH, ANNOTATIONS)}
    if form is not None:
        forms[ANNOTATIONS if form.data.get("mode") == ANNOTATIONS else BATCH] = form
    context = {"batch_form": forms[BATCH], "annotation_form": forms[ANNOTATIONS],
               "max_bytes": settings.ANNOTATOR_UPLOAD_MAX_BYTES}
    return render(request, "annotator/upload.html", context, status=status)


def _preview(pending: dict, data: bytes):
    build = batch_upload_preview if pending["mode"] == BATCH else annotation_upload_preview
    rubric = Rubric.from_dict(pending["rubric"]) if pending.get("rubric") else None
    return build(data=data, filename=pending["filename"], name=pending["name"], k=pending["k"],
                 rubric=rubric, max_bytes=settings.ANNOTATOR_UPLOAD_MAX_BYTES)


def _save(pending: dict, data: bytes, user) -> str:
    rubric = Rubric.from_dict(pending["rubric"]) if pending.get("rubric") else None
    common = dict(data=data, filename=pending["filename"], k=pending["k"], created_by=user,
                  max_bytes=settings.ANNOTATOR_UPLOAD_MAX_BYTES)
    if pending["mode"] == BATCH:
        batch = batch_import_file(name=pending["name"], rubric=rubric or Rubric.default(), **common)
        return f"Batch \u201c{batch.name}\u201d created with {batch.items.count()} items."
    plan = annotations_import_file(batch_name=pending["name"], rubric=rubric, **common)
    return (f"Imported {len(plan.parsed.annotations)} annotations into \u201c{plan.batch_name}\u201d "
            f"({len(plan.new_items)} new items, {len(plan.new_users)} new annotator accounts).")


@require_GET
@admin_required
def upload(request):
    return _page(request)


@require_POST
@admin_required
def preview(request):
    mode = ANNOTATIONS if request.POST.get("mode") == ANNOTATIONS else BATCH
    form = UploadForm(request.POST, request.FILES, auto_id=f"{mode}_%s")
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data["file"].read()
    rubric = form.cleaned_data["rubric_file"]
    pending = {"mode": form.cleaned_data["mode"], "filename": form.cleaned_data["file"].name,
               "name": form.cleaned_data["name"], "k": form.cleaned_data["k"],
               "rubric": rubric.to_dict() if rubric else None}
    try:
        result = _preview(pending, data)
    except FileRefused as exc:
        form.add_error("file", str(exc))
        return _page(request, form, status=400)
    token = _remember(request, data, pending) if result.ok else ""
    return render(request, "annotator/upload_preview.html", {"preview": result, "token": token})


@require_POST
@admin_required
def confirm(request):
    token = request.POST.get("token", "")
    pending = request.session.get(SESSION_KEY, {}).get(token)
    data = _store().load(token) if pending else None
    if data is None:
        messages.error(request, "This upload is no longer waiting for confirmation; upload the file again.")
        return redirect("upload")
    try:
        message = _save(pending, data, request.user)
    except (FileRefused, ImportRefused):
        _forget(request, token)
        return render(request, "annotator/upload_preview.html", {"preview": _preview(pending, data), "token": ""},
                      status=400)
    _forget(request, token)
    messages.success(request, message)
    return redirect("upload")


@require_POST
@admin_required
def cancel(request):
    _forget(request, request.POST.get("token", ""))
    messages.info(request, "Upload cancelled; nothing was saved.")
    return redirect("upload")


@require_GET
@login_required
def annotation_template(request):
    return FileResponse(TEMPLATE_CSV.open("rb"), as_attachment=True, filename="annotation_template.csv",
                        content_type="text/csv; charset=utf-8")


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
