from functools import cache

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path
from django.utils.module_loading import import_string

from annotator.api.main import api
from annotator.quality.views import adjudication
from annotator.quality.views import exclusion as quality
from annotator.rating.views import assignment_admin, queue, rating
from annotator.studies.prolific import views as prolific_views
from annotator.studies.views import admin as study_admin
from annotator.studies.views import flow as study_flow
from annotator.studies.views import links as study_links
from annotator.views import api_tokens, home, jobs


class _Imported:
    """Views of a module imported on its first request. Judges and reports pull in numpy and pandas
    (and, when they draw, matplotlib), uploads the file parsers; a worker that only serves rating
    pages never loads them."""

    def __init__(self, module: str):
        self.module = module

    def __getattr__(self, name: str):
        @cache
        def target():
            return import_string(f"{self.module}.{name}")

        def view(request, *args, **kwargs):
            return target()(request, *args, **kwargs)

        view.__name__ = view.__qualname__ = name
        view.__module__ = self.module
        return view


uploads = _Imported("annotator.uploads.views")
judges = _Imported("annotator.judges.views.judges")
reports = _Imported("annotator.reports.views")
judge_reports = _Imported("annotator.judges.views.report")
calibration_sets = _Imported("annotator.judges.views.calibration_set")
judge_review = _Imported("annotator.judges.views.review")
study_plans = _Imported("annotator.studies.views.plan")
streams = _Imported("annotator.streams.views")

handler400 = "annotator.views.errors.bad_request"  # a session ended meanwhile: say so, and what to do
handler403 = "annotator.views.errors.permission_denied"  # which role the page needs, and a way back
handler500 = "annotator.views.errors.server_error"  # a database that does not answer: 503, try again

urlpatterns = [
    path("", home.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("rubric/", home.rubric, name="rubric"),
    path("favicon.ico", home.favicon, name="favicon"),
    path("django-admin/", admin.site.urls),
    path("uploads/", uploads.upload, name="upload"),
    path("uploads/preview/", uploads.preview, name="upload_preview"),
    path("uploads/confirm/", uploads.confirm, name="upload_confirm"),
    path("uploads/cancel/", uploads.cancel, name="upload_cancel"),
    path("uploads/annotation_template.csv", uploads.annotation_template, name="annotation_template"),
    path("annotate/", queue.queue, name="annotate_queue"),
    path("annotate/<int:batch_id>/next/", rating.next_item, name="annotate_next"),
    path("annotate/<int:batch_id>/mine/", rating.mine, name="annotate_mine"),
    path("annotate/<int:batch_id>/consent/", study_flow.consent, name="study_consent"),
    path("annotate/<int:batch_id>/instructions/", study_flow.instructions, name="study_instructions"),
    path("annotate/<int:batch_id>/done/", study_flow.done, name="study_done"),
    path("annotate/item/<int:item_pk>/submit/", rating.submit, name="annotate_submit"),
    path("annotate/item/<int:item_pk>/skip/", rating.skip, name="annotate_skip"),
    path("annotate/answer/<int:answer_pk>/submit/", rating.gold_submit, name="gold_submit"),
    path("annotate/answer/<int:answer_pk>/skip/", rating.gold_skip, name="gold_skip"),
    path("annotations/<int:pk>/edit/", rating.edit, name="annotation_edit"),
    path("assignment/", assignment_admin.overview, name="assignment_overview"),
    path("assignment/<int:batch_id>/", assignment_admin.batch_assignment, name="assignment_batch"),
    path(
        "assignment/<int:batch_id>/release/<int:assignment_id>/",
        assignment_admin.lease_release,
        name="assignment_release",
    ),
    # Public link pages (the token is the credential; rate-limited per address).
    path("study/<str:study_token>/", study_links.study_entry, name="study_entry"),
    path("study/<str:study_token>/new-worker/", study_links.study_new_worker, name="study_new_worker"),
    path("invite/<str:invite_token>/", study_links.invite, name="invite"),
    path("signin/<str:signin_token>/", study_links.signin, name="signin_link"),
    path("studies/", study_admin.studies, name="studies"),
    path("studies/study-link/", study_admin.study_link_new, name="study_link_new"),
    path("studies/invite-link/", study_admin.invite_link_new, name="invite_link_new"),
    path("studies/annotators/", study_admin.annotators_new, name="annotators_new"),
    path("studies/revoke/<str:kind>/<int:link_id>/", study_admin.link_revoke_view, name="link_revoke"),
    path("studies/<int:batch_id>/settings/", study_admin.study_settings, name="study_settings"),
    path("studies/<int:batch_id>/quality/", study_admin.study_quality, name="study_quality"),
    path("studies/<int:batch_id>/workers.csv", study_admin.payments_csv, name="study_workers_csv"),
    path("studies/prolific-review/", prolific_views.prolific_review, name="prolific_review"),
    path("prolific/webhook/", prolific_views.prolific_webhook, name="prolific_webhook"),
    path("judges/", judges.judges, name="judges"),
    path("judges/import/scores/", judges.import_scores, name="judge_import_scores"),
    path("judges/import/verdicts/", judges.import_verdicts, name="judge_import_verdicts"),
    path("judges/run/", judges.start_run, name="judge_run"),
    path("reports/", reports.report_list, name="report_list"),
    path("reports/<int:batch_id>/", reports.report_batch, name="report_batch"),
    path("reports/<int:batch_id>/judges/", judge_reports.report_judges, name="report_judges"),
    path("reports/<int:batch_id>/export/<str:fmt>", reports.report_export, name="report_export"),
    path(
        "reports/<int:batch_id>/annotators/<int:user_pk>/exclude/", quality.exclude, name="annotator_exclude"
    ),
    path(
        "reports/<int:batch_id>/annotators/<int:user_pk>/include/", quality.include, name="annotator_include"
    ),
    path("adjudicate/<int:batch_id>/", adjudication.queue, name="adjudication_queue"),
    path("adjudicate/<int:batch_id>/adjudicators/", adjudication.grant, name="adjudicator_grant"),
    path("adjudicate/item/<int:item_pk>/", adjudication.item, name="adjudication_item"),
    path("adjudicate/item/<int:item_pk>/gold/", adjudication.to_gold, name="adjudication_to_gold"),
    path("reports/<int:batch_id>/judges/<int:judge_id>/", judge_reports.report_judge_card, name="judge_card"),
    path(
        "reports/<int:batch_id>/judges/<int:judge_id>/card.<str:card_fmt>",
        judge_reports.report_judge_card_export,
        name="judge_card_export",
    ),
    path(
        "reports/<int:batch_id>/judges/<int:judge_id>/disagreements/",
        judge_reports.report_judge_disagreements,
        name="judge_disagreements",
    ),
    path("reports/<int:batch_id>/calibration-set/", calibration_sets.calibration_set, name="calibration_set"),
    path(
        "reports/<int:batch_id>/calibration-set/retire/",
        calibration_sets.calibration_set_retire_view,
        name="calibration_set_retire",
    ),
    path("reports/item/<int:item_pk>/", reports.report_item, name="report_item"),
    path("reports/<int:batch_id>/review/", judge_review.review, name="review_items"),
    path("reports/<int:batch_id>/plan/", study_plans.report_plan, name="report_plan"),
    path(
        "reports/<int:batch_id>/review/queue-first/",
        judge_review.review_queue_first,
        name="review_queue_first",
    ),
    path("reports/<int:batch_id>/review/draw/", judge_review.review_draw, name="review_draw"),
    path("reports/<int:batch_id>/review/draw.csv", judge_review.review_draw_csv, name="review_draw_csv"),
    path(
        "reports/<int:batch_id>/review/draw/retire/",
        judge_review.review_draw_retire_view,
        name="review_draw_retire",
    ),
    path("streams/", streams.stream_list, name="stream_list"),
    path("streams/<str:stream_name>/", streams.stream_page, name="stream_page"),
    path("streams/<str:stream_name>/series.csv", streams.stream_series_csv, name="stream_series_csv"),
    path("jobs/<uuid:job_id>/", jobs.job_status, name="job_status"),
    path("jobs/<uuid:job_id>/download/", jobs.job_download, name="job_download"),
    path("jobs/<uuid:job_id>/try-again/", jobs.job_try_again, name="job_try_again"),
    path("jobs/<uuid:job_id>/stop/", jobs.job_stop, name="job_stop"),
    path("healthz", jobs.healthz, name="healthz"),
    path("account/api-tokens/", api_tokens.api_tokens, name="api_tokens"),
    path("account/api-tokens/new/", api_tokens.api_token_new, name="api_token_new"),
    path(
        "account/api-tokens/<int:token_id>/revoke/", api_tokens.api_token_revoke_view, name="api_token_revoke"
    ),
    path("api/v1/", api.urls),
]
