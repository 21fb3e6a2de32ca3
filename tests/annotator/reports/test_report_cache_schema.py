"""Stored reports across a release that changes a report's classes: rows are keyed by a schema version
read from the classes' fields, and a row that cannot be read is recomputed, never a 500."""

import dataclasses
import json
import pickle

import pytest
from django.urls import reverse

from annotator.models import ReportCache
from annotator.reports.selectors import batch_report as reports
from annotator.reports.selectors import stored as report_cache
from annotator.reports.selectors.stored import report_schema_version, schema_classes
from hcs.agreement import DimensionAgreement
from tests.annotator.api.conftest import ApiClient, token_for
from tests.annotator.reports.test_report_cache import rated  # noqa: F401, F811 (the fixture)
from tests.factories import PASSWORD, make_user

EXPORTS = ("json", "dimensions.csv", "items.csv")


def _classes(*, with_note: bool):
    """A report-like pair of classes; the inner one, reached only through ``tuple[Cell, ...]``, gains a
    field in the second release."""

    @dataclasses.dataclass(frozen=True)
    class Cell:
        value: float
        if with_note:
            note: str = ""

    @dataclasses.dataclass(frozen=True)
    class Table:
        cells: tuple[Cell, ...]
        total: float | None

    def build() -> Table:
        return Table((), None)

    return Table, build


def test_a_field_added_anywhere_in_the_report_changes_the_schema():
    before, build_before = _classes(with_note=False)
    after, build_after = _classes(with_note=True)
    assert schema_classes([before]) != schema_classes([after])
    assert schema_classes([build_before]) == schema_classes([before])  # a function: by its return type
    assert schema_classes([build_after]) == schema_classes([after])
    names = set(schema_classes([after]))
    assert any(name.endswith("Cell") for name in names), names


def test_the_schema_covers_the_statistics_the_report_sections_and_the_quality_section():
    names = set(schema_classes(report_cache._schema_roots()))
    for expected in (
        "annotator.reports.selectors.batch_report.BatchReport",
        "hcs.agreement.DimensionAgreement",
        "hcs.scoring.AnnotatorQuality",
        "annotator.quality.selectors.report_section.QualitySection",
        "annotator.judges.selectors.judges.JudgesSection",
        "annotator.judges.selectors.judges.PairwiseSection",
        "hcs.ppi.PPIMean",
        "hcs.rubric.Rubric",
    ):
        assert expected in names, expected


def test_a_new_field_in_a_statistics_class_changes_the_stored_key(monkeypatch):
    """Nobody bumps a number: a statistic's class with one more field is another schema version."""

    @dataclasses.dataclass(frozen=True)
    class WithNewField(DimensionAgreement):
        new_statistic: float | None = None

    WithNewField.__qualname__ = WithNewField.__name__ = "DimensionAgreement"
    WithNewField.__module__ = "hcs.agreement"
    current = report_schema_version()
    monkeypatch.setattr(reports, "DimensionAgreement", WithNewField)  # what DimensionRow's field names
    assert report_schema_version.__wrapped__() != current
    monkeypatch.undo()
    assert report_schema_version.__wrapped__() == current


def _without_a_field(value):
    """What an earlier release pickled: every DimensionAgreement without ``n_items_pairable`` (a field
    that release's class did not have)."""
    if isinstance(value, DimensionAgreement):
        object.__delattr__(value, "n_items_pairable")
    elif isinstance(value, reports.BatchReport):
        for row in value.dimensions:
            _without_a_field(row.agreement)
    elif isinstance(value, dict):
        for inner in value.values():
            _without_a_field(inner)
    return value


@pytest.fixture
def researcher(client):
    user = make_user("schema-viewer", role="researcher")
    assert client.login(username=user.username, password=PASSWORD)
    return user


def _answers(client, researcher, batch):
    """The exports, the report page and the API's report, as they answer now."""
    urls = [reverse("report_export", args=[batch.pk, fmt]) for fmt in EXPORTS]
    out = {url: client.get(url) for url in [*urls, reverse("report_batch", args=[batch.pk])]}
    out["api"] = ApiClient(token_for(researcher)).get(f"/batches/{batch.pk}/report")
    return out


def test_reports_stored_by_an_earlier_release_are_recomputed_not_a_500(
    client,
    rated,  # noqa: F811
    researcher,
    monkeypatch,
):
    batch, _ = rated
    with monkeypatch.context() as patch:  # the earlier release: its schema, its classes
        patch.setattr(report_cache, "report_schema_version", lambda: "earlier-release", raising=False)
        assert all(r.status_code == 200 for r in _answers(client, researcher, batch).values())
        stored = list(ReportCache.objects.filter(batch=batch))
        assert stored
        for row in stored:
            row.payload = pickle.dumps(_without_a_field(pickle.loads(row.payload)))
            row.save(update_fields=["payload"])

    now = _answers(client, researcher, batch)  # after the deploy, the batch unchanged
    assert {key: r.status_code for key, r in now.items()} == dict.fromkeys(now, 200)
    exported = json.loads(now[reverse("report_export", args=[batch.pk, "json"])].content)
    assert "percent_agreement_within_1" in json.dumps(exported)  # the field the old pickle lacked
    # What is served now is what a fresh computation gives.
    ReportCache.objects.all().delete()
    fresh = _answers(client, researcher, batch)
    for fmt in EXPORTS:
        url = reverse("report_export", args=[batch.pk, fmt])
        assert now[url].content == fresh[url].content, fmt
    assert now["api"].json() == fresh["api"].json()


@pytest.mark.parametrize(
    "payload",
    [
        b"not a pickle",
        pickle.dumps(object()).replace(b"builtins", b"gone_mod"),  # a module gone
        pickle.dumps(reports.DimensionRow).replace(b"DimensionRow", b"NoSuchClass1"),  # a class gone
    ],
    ids=["garbage", "module-gone", "class-gone"],
)
def test_a_stored_report_that_cannot_be_read_is_recomputed_and_replaced(client, rated, researcher, payload):  # noqa: F811
    batch, _ = rated
    url = reverse("report_export", args=[batch.pk, "json"])
    first = client.get(url)
    assert first.status_code == 200
    ReportCache.objects.filter(batch=batch).update(payload=payload)
    again = client.get(url)
    assert again.status_code == 200 and again.content == first.content
    api = ApiClient(token_for(researcher)).get(f"/batches/{batch.pk}/report")
    assert api.status_code == 200
    # The unreadable rows were replaced by readable ones.
    for row in ReportCache.objects.filter(batch=batch):
        pickle.loads(row.payload)
