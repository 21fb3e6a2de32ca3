"""The judges package's rows of the export-format table: declared in one list, included by the core
table in the place the report page links them, and the core's only way into the judge exports."""

import pytest
from django.urls import reverse

from annotator.judges.exports.formats import JUDGE_EXPORT_FORMATS
from annotator.reports.exports.formats import CSV_TABLES, EXPORT_FORMATS, TABLES
from tests.annotator.judges.test_judges_selector import _add_scores, _study
from tests.factories import PASSWORD, make_batch
from tests.test_import_graph import _imports, _modules

JUDGE_KEYS = ["judges.csv", "judge_scores.csv", "pairwise_verdicts.csv", "judge_calls.jsonl"]


def test_the_judges_package_declares_its_four_rows():
    assert [f.key for f in JUDGE_EXPORT_FORMATS] == JUDGE_KEYS
    assert all(f.judges for f in JUDGE_EXPORT_FORMATS)
    assert [f.key for f in JUDGE_EXPORT_FORMATS if f.background] == ["judge_calls.jsonl"]


def test_the_core_table_includes_them_in_place():
    assert list(EXPORT_FORMATS) == [
        "json",
        "html",
        "dimensions.csv",
        "items.csv",
        "comparisons.csv",
        "scores.csv",
        "annotations.csv",
        *JUDGE_KEYS,
        "hf",
    ]
    for row in JUDGE_EXPORT_FORMATS:
        assert EXPORT_FORMATS[row.key] is row
    assert not [key for key, f in EXPORT_FORMATS.items() if f.judges and key not in JUDGE_KEYS]
    assert TABLES["judge_calls"] == "judge_calls.jsonl" and {
        "judges",
        "judge_scores",
        "pairwise_verdicts",
    } <= set(CSV_TABLES)


def test_the_core_table_reaches_the_judge_exports_only_through_their_list():
    modules = _modules()
    reached = _imports(
        "annotator.reports.exports.formats", modules["annotator.reports.exports.formats"], modules
    )
    assert sorted(m for m in reached if m.startswith("annotator.judges")) == [
        "annotator.judges.exports.formats"
    ]


def _login(client, user):
    assert client.login(username=user.username, password=PASSWORD)


@pytest.mark.django_db
def test_the_report_page_links_the_judge_rows_only_when_the_batch_has_judge_data(client, researcher_user):
    _login(client, researcher_user)
    plain = make_batch("plain", n_items=3)
    page = client.get(reverse("report_batch", args=[plain.pk])).content.decode()
    assert reverse("report_export", args=[plain.pk, "json"]) in page
    assert not [k for k in JUDGE_KEYS if reverse("report_export", args=[plain.pk, k]) in page]
    batch, _truth, human = _study(n_items=6)
    _add_scores("mean", batch, {i: sum(r.values()) / len(r) for i, r in human.items()})
    page = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    for row in JUDGE_EXPORT_FORMATS:
        assert reverse("report_export", args=[batch.pk, row.key]) in page and row.label in page
