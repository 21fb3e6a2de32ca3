"""Reports stored per batch revision: every write a report reads moves the revision, a stored report
is served instead of recomputed, and old revisions are pruned."""

from unittest import mock

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.judges.services.calibration_set import calibration_set_mark, calibration_set_retire
from annotator.models import (
    Annotation,
    AnnotatorStanding,
    Assignment,
    Judge,
    JudgeScore,
    QualityRule,
    ReportCache,
)
from annotator.quality.services.adjudication import adjudication_save
from annotator.quality.services.exclusion import annotator_exclude, annotator_include
from annotator.rating.services.annotations import annotation_update
from annotator.reports.selectors import batch_report as reports
from annotator.reports.selectors.batch_report import batch_report, batch_report_computed
from annotator.reports.selectors.stored import report_revision
from annotator.reports.services import storing as report_cache_service
from tests.factories import PASSWORD, make_annotation, make_batch, make_user

DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]


def _scores(value):
    return dict.fromkeys(DIMS, value)


@pytest.fixture
def rated(db):
    batch = make_batch("cached", n_items=4, k=3)
    people = [make_user(f"cached-r{j}") for j in range(3)]
    for n, item in enumerate(batch.items.order_by("position")):
        for j, person in enumerate(people):
            make_annotation(item, person, _scores(1 + (n + j) % 5))
    return batch, people


def _moves(batch, write):
    before = report_revision(batch=batch)
    write()
    after = report_revision(batch=batch)
    assert after != before
    return after


def test_every_write_a_report_reads_moves_the_revision(rated):
    batch, people = rated
    item = batch.items.order_by("position").first()
    newcomer = make_user("cached-new")
    researcher = make_user("cached-researcher", role="researcher")
    annotation = Annotation.objects.filter(item=item).order_by("pk").first()
    _moves(batch, lambda: make_annotation(item, newcomer, _scores(3)))  # a submit or an import
    _moves(
        batch,
        lambda: annotation_update(annotation=annotation, changed_by=annotation.annotator, scores=_scores(5)),
    )  # an edit
    _moves(batch, lambda: Annotation.objects.filter(annotator=newcomer).delete())
    _moves(
        batch, lambda: annotator_exclude(batch=batch, annotator=people[0], reason="too fast", by=researcher)
    )
    _moves(batch, lambda: annotator_include(batch=batch, annotator=people[0]))
    _moves(
        batch, lambda: adjudication_save(item=item, adjudicator=researcher, scores=_scores(4), note="checked")
    )
    judge = Judge.objects.create(name="j")
    _moves(
        batch,
        lambda: JudgeScore.objects.create(
            judge=judge, item=item, dimension="coherence", raw_value=4, scale_min=1, scale_max=5, value=4
        ),
    )
    _moves(batch, lambda: calibration_set_mark(batch=batch, sample=2, seed=1, user=researcher))
    _moves(batch, lambda: calibration_set_retire(batch=batch))
    _moves(batch, lambda: QualityRule.objects.update_or_create(batch=batch, defaults={"min_seconds": 9.5}))
    _moves(
        batch,
        lambda: (
            AnnotatorStanding.objects.filter(batch=batch, annotator=people[1]).update(
                warned_at=timezone.now()
            )
            or AnnotatorStanding.objects.create(batch=batch, annotator=people[1], warned_at=timezone.now())
        ),
    )
    _moves(
        batch,
        lambda: Assignment.objects.create(
            item=item,
            batch=batch,
            annotator=people[2],
            state=Assignment.State.SKIPPED,
            leased_at=timezone.now(),
            lease_expires_at=timezone.now(),
        ),
    )


def test_reading_the_report_moves_nothing(rated):
    batch, _ = rated
    before = report_revision(batch=batch)
    batch_report(batch=batch, n_resamples=10)
    assert report_revision(batch=batch) == before


def test_a_stored_report_is_served_without_computing_and_equals_a_fresh_one(rated):
    batch, _ = rated
    first = batch_report(batch=batch, n_resamples=20)
    assert ReportCache.objects.filter(batch=batch).count() == 1
    with mock.patch.object(reports, "batch_report_computed", side_effect=AssertionError("recomputed")):
        again = batch_report(batch=batch, n_resamples=20)
    fresh = batch_report_computed(batch=batch, n_resamples=20)
    assert again.dimensions == fresh.dimensions == first.dimensions
    assert again.systems == fresh.systems and again.annotators == fresh.annotators
    # other options are another stored report; the whole report serves the page's smaller request
    with mock.patch.object(reports, "batch_report_computed", side_effect=AssertionError("recomputed")):
        smaller = batch_report(batch=batch, n_resamples=20, with_sections=False)
    assert smaller.sections == {} and smaller.dimensions == first.dimensions
    batch_report(batch=batch, n_resamples=21)
    assert ReportCache.objects.filter(batch=batch).count() == 2


def test_a_write_makes_the_next_report_fresh_and_prunes_the_old_revision(rated):
    batch, people = rated
    before = batch_report(batch=batch, n_resamples=0)
    old = ReportCache.objects.get(batch=batch).revision
    make_annotation(batch.items.order_by("position").last(), make_user("cached-late"), _scores(5))
    after = batch_report(batch=batch, n_resamples=0)
    assert after.n_annotations == before.n_annotations + 1
    assert (
        list(ReportCache.objects.filter(batch=batch).values_list("revision", flat=True))
        == [report_revision(batch=batch)]
        != [old]
    )


def test_a_report_whose_batch_changed_while_it_was_computed_is_not_stored(rated):
    batch, people = rated
    real = reports.batch_report_computed

    def computing_while_someone_rates(**kwargs):
        report = real(**kwargs)
        make_annotation(batch.items.order_by("position").last(), make_user("cached-meanwhile"), _scores(2))
        return report

    with mock.patch.object(reports, "batch_report_computed", side_effect=computing_while_someone_rates):
        batch_report(batch=batch, n_resamples=0)
    assert not ReportCache.objects.filter(batch=batch).exists()


def test_at_most_a_bounded_number_of_option_sets_is_kept(rated, monkeypatch):
    batch, _ = rated
    monkeypatch.setattr(report_cache_service, "KEEP_PER_BATCH", 3)
    for seed in range(5):
        batch_report(batch=batch, n_resamples=0, seed=seed, with_sections=False)
    assert ReportCache.objects.filter(batch=batch).count() == 3


def test_the_page_and_the_judge_section_are_served_from_storage_and_exclude_computes_nothing(client, rated):
    batch, people = rated
    researcher = make_user("cached-viewer", role="researcher")
    assert client.login(username=researcher.username, password=PASSWORD)
    page, judges = reverse("report_batch", args=[batch.pk]), reverse("report_judges", args=[batch.pk])
    first_page, first_judges = (
        client.get(page),
        client.get(judges, HTTP_HX_REQUEST="true"),
    )  # as the page asks
    assert first_page.status_code == first_judges.status_code == 200
    with (
        mock.patch.object(reports, "batch_report_computed", side_effect=AssertionError("recomputed")),
        mock.patch(
            "annotator.reports.exports.html_export.report_context", side_effect=AssertionError("redrawn")
        ),
    ):
        again = client.get(page)
        assert client.get(judges, HTTP_HX_REQUEST="true").content == first_judges.content
        assert again.status_code == 200 and b"cached-r0" in again.content
        # exclude and include answer without computing the report; the next page view computes it
        exclude = reverse("annotator_exclude", args=[batch.pk, people[0].pk])
        excluded = client.post(exclude, {"reason": "fast"})
        included = client.post(reverse("annotator_include", args=[batch.pk, people[0].pk]))
    assert excluded.status_code == included.status_code == 302
    assert AnnotatorStanding.objects.get(batch=batch, annotator=people[0]).excluded is False


def test_a_large_batch_page_is_computed_by_the_worker_and_then_served(client, rated, settings):
    from annotator.models import Job

    batch, _ = rated
    settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS = 3  # the batch has 4 items
    client.force_login(make_user("cached-large", role="researcher"))
    page = reverse("report_batch", args=[batch.pk])
    with mock.patch.object(reports, "batch_report_computed", side_effect=AssertionError("computed")):
        queued = client.get(page)
        assert client.get(page).url == queued.url  # a second look waits for the same job
    job = Job.objects.get()
    assert queued.status_code == 302 and queued.url == reverse("job_status", args=[job.pk])
    from annotator.services.job_runner import job_run

    job_run(job_id=str(job.pk))
    job.refresh_from_db()
    assert job.state == Job.DONE
    assert f'href="{page}"' in client.get(queued.url).content.decode()  # the done job leads back to the page
    with mock.patch.object(reports, "batch_report_computed", side_effect=AssertionError("computed")):
        served = client.get(page)
    assert served.status_code == 200 and b"cached-r0" in served.content
    assert Job.objects.count() == 1


@pytest.mark.parametrize("sort", ["x" * 5000, "bias%00", "%C3%A9%ED%A0%80", "%3Cscript%3E"])
def test_any_sort_in_the_query_string_is_stored_under_a_bounded_key(client, rated, sort):
    batch, _ = rated
    client.force_login(make_user("cached-sorter", role="researcher"))
    # the query string as sent, percent-encoded
    response = client.get(reverse("report_batch", args=[batch.pk]) + "?sort=" + sort)
    assert response.status_code in (200, 400)
    keys = list(ReportCache.objects.filter(batch=batch).values_list("options", flat=True))
    assert keys and all(len(k) <= 200 and k.isascii() and k.isprintable() for k in keys)


def test_a_backup_leaves_stored_reports_out_and_the_restored_report_is_the_same(rated, tmp_path):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotator.models import Batch

    batch, _ = rated
    before = batch_report(batch=batch, n_resamples=30)
    assert ReportCache.objects.exists()
    call_command("export_all", out=tmp_path / "backup")
    assert not list((tmp_path / "backup").glob("annotator.reportcache*"))
    Batch.objects.all().delete()
    get_user_model().objects.all().delete()
    call_command("import_all", tmp_path / "backup")
    assert not ReportCache.objects.exists()
    after = batch_report(batch=Batch.objects.get(name="cached"), n_resamples=30)
    assert after.dimensions == before.dimensions and after.annotators == before.annotators


def test_a_registered_section_moves_the_revision_by_what_it_reads(rated):
    """A feature's section names what it reads (``ReportSection.revision``); the core digests it."""
    from annotator.reports.selectors.sections import REPORT_SECTIONS, ReportSection

    batch, _ = rated
    state = {"rows": 1}
    extra = ReportSection("extra", lambda inputs: None, revision=lambda b: [b.pk, state["rows"]])
    with mock.patch.dict(REPORT_SECTIONS, {"extra": extra}):
        before = report_revision(batch=batch)
        assert report_revision(batch=batch) == before
        state["rows"] = 2
        assert report_revision(batch=batch) != before
