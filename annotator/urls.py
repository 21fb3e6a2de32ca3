from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from annotator.views import (
    assignment_admin,
    home,
    jobs,
    judges,
    queue,
    rating,
    reports,
    uploads,
)

handler500 = "annotator.views.errors.server_error"  # a database that does not answer: 503, try again

urlpatterns = [
    path("", home.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("rubric/", home.rubric, name="rubric"),
    path("django-admin/", admin.site.urls),
    path("uploads/", uploads.upload, name="upload"),
    path("uploads/preview/", uploads.preview, name="upload_preview"),
    path("uploads/confirm/", uploads.confirm, name="upload_confirm"),
    path("uploads/cancel/", uploads.cancel, name="upload_cancel"),
    path("uploads/annotation_template.csv", uploads.annotation_template, name="annotation_template"),
    path("annotate/", queue.queue, name="annotate_queue"),
    path("annotate/<int:batch_id>/next/", rating.next_item, name="annotate_next"),
    path("annotate/<int:batch_id>/mine/", rating.mine, name="annotate_mine"),
    path("annotate/item/<int:item_pk>/submit/", rating.submit, name="annotate_submit"),
    path("annotate/item/<int:item_pk>/skip/", rating.skip, name="annotate_skip"),
    path("annotations/<int:pk>/edit/", rating.edit, name="annotation_edit"),
    path("assignment/", assignment_admin.overview, name="assignment_overview"),
    path("assignment/<int:batch_id>/", assignment_admin.batch_assignment, name="assignment_batch"),
    path(
        "assignment/<int:batch_id>/release/<int:assignment_id>/",
        assignment_admin.lease_release,
        name="assignment_release",
    ),
    path("judges/", judges.judges, name="judges"),
    path("judges/import/scores/", judges.import_scores, name="judge_import_scores"),
    path("judges/import/verdicts/", judges.import_verdicts, name="judge_import_verdicts"),
    path("reports/", reports.report_list, name="report_list"),
    path("reports/<int:batch_id>/", reports.report_batch, name="report_batch"),
    path("reports/<int:batch_id>/export/<str:fmt>", reports.report_export, name="report_export"),
    path("reports/item/<int:item_pk>/", reports.report_item, name="report_item"),
    path("jobs/<uuid:job_id>/", jobs.job_status, name="job_status"),
    path("jobs/<uuid:job_id>/download/", jobs.job_download, name="job_download"),
    path("jobs/<uuid:job_id>/try-again/", jobs.job_try_again, name="job_try_again"),
    path("healthz", jobs.healthz, name="healthz"),
]
