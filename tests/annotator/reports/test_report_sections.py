"""The report sections table: what it lists is what the report, the JSON export and the page's
judge part build, and the core report reaches the judges package only through it."""

import json
from dataclasses import dataclass
from typing import ClassVar

import pytest
from django.urls import reverse
from django.utils.module_loading import import_string

from annotator.judges.selectors.judges import judges_report, pairwise_report
from annotator.models import Judge, JudgeFailure, JudgeScore, PairwiseVerdict
from annotator.reports.exports.json_export import report_json
from annotator.reports.selectors import sections as report_sections
from annotator.reports.selectors.batch_report import batch_report, report_arrays
from annotator.reports.selectors.sections import REPORT_SECTIONS, ReportSection, batch_has_sections
from tests.annotator.judges.test_judges_selector import _add_scores, _study
from tests.factories import PASSWORD, make_batch
from tests.test_import_graph import _imports, _modules


@dataclass(frozen=True)
class Extra:
    template: ClassVar[str] = ""  # these tests read it from the report and the JSON, not from a page
    n_items: int
    epsilon: float
    n_resamples: int
    seed: int

    def to_json(self):
        return {
            "n_items": self.n_items,
            "epsilon": self.epsilon,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
        }


@pytest.fixture
def sections():
    """The table, put back as it was (in its order: the page shows the sections in it) after the test."""
    kept = dict(REPORT_SECTIONS)
    yield REPORT_SECTIONS
    REPORT_SECTIONS.clear()
    REPORT_SECTIONS.update(kept)


def extra_section(inputs):
    return Extra(len(inputs.arrays.item_pk), inputs.epsilon, inputs.n_resamples, inputs.seed)


def test_the_table_lists_the_sections_by_importable_path():
    assert list(REPORT_SECTIONS) == ["judges", "judge_pairwise", "comparisons"]
    for name, section in REPORT_SECTIONS.items():
        assert section.name == name
        assert isinstance(section.builder, str) and callable(import_string(section.builder))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "builder", [extra_section, "tests.annotator.reports.test_report_sections.extra_section"]
)
def test_a_listed_section_is_built_into_the_report_and_its_json(sections, builder):
    sections["extra"] = ReportSection("extra", builder)
    batch = make_batch("sections", n_items=4)
    report = batch_report(batch=batch, n_resamples=7, seed=5, epsilon=0.2)
    assert list(report.sections) == ["judges", "judge_pairwise", "comparisons", "extra"]
    assert report.sections["extra"] == Extra(4, 0.2, 7, 5)
    data = json.loads(report_json(report))
    assert data["extra"] == {"n_items": 4, "epsilon": 0.2, "n_resamples": 7, "seed": 5}
    assert batch_report(batch=batch, with_sections=False).sections == {}


@pytest.mark.django_db
def test_a_section_left_out_of_the_table_is_not_built(sections):
    del sections["judge_pairwise"]
    batch, _truth, _human = _study(n_items=12)
    assert list(batch_report(batch=batch, n_resamples=10).sections) == ["judges", "comparisons"]


@pytest.mark.django_db
def test_the_judge_sections_through_the_table_equal_the_direct_calls():
    batch, _truth, human = _study(n_items=24)
    _add_scores("mean", batch, {i: sum(r.values()) / len(r) for i, r in human.items()})
    report = batch_report(batch=batch, n_resamples=40, seed=3, epsilon=0.15)
    arrays = report_arrays(batch=batch)  # nobody is excluded: the kept arrays are everyone's
    direct = judges_report(batch=batch, arrays=arrays, epsilon=0.15, n_boot=40, seed=3)
    assert report.sections["judges"].to_json() == direct.to_json()
    assert report.sections["judges"].epsilon == 0.15
    assert report.sections["judge_pairwise"] == pairwise_report(batch=batch, arrays=arrays)


@pytest.mark.django_db
def test_the_page_part_renders_what_the_table_lists(client, researcher_user, sections):
    batch, _truth, human = _study(n_items=12)
    _add_scores("<i>mean</i>", batch, {i: sum(r.values()) / len(r) for i, r in human.items()})
    assert client.login(username=researcher_user.username, password=PASSWORD)
    url = reverse("report_judges", args=[batch.pk])
    assert "&lt;i&gt;mean&lt;/i&gt;" in client.get(url).content.decode()
    del sections["judges"]
    assert "&lt;i&gt;mean&lt;/i&gt;" not in client.get(url).content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("row", ["none", "score", "failure", "verdict"])
def test_the_batch_has_sections_when_it_has_any_judge_row(row, django_assert_max_num_queries):
    batch = make_batch("presence", n_items=2)
    first, second = batch.items.order_by("position")
    judge = Judge.objects.create(name="j")
    if row == "score":
        JudgeScore.objects.create(
            judge=judge, item=first, dimension="coherence", raw_value=3, scale_min=1, scale_max=5, value=3
        )
    elif row == "failure":
        JudgeFailure.objects.create(judge=judge, item=first, error="no answer")
    elif row == "verdict":
        PairwiseVerdict.objects.create(judge=judge, baseline=first, enhanced=second, winner="tie")
    with django_assert_max_num_queries(3):  # one indexed existence check per kind of judge row at most
        assert batch_has_sections(batch=batch, judges_only=True) is (row != "none")
    with django_assert_max_num_queries(4):  # and one for the comparisons: this batch has one system
        assert batch_has_sections(batch=batch) is (row != "none")


@pytest.mark.django_db
def test_each_listed_sections_presence_is_asked(sections):
    batch = make_batch("presence", n_items=1)
    assert not batch_has_sections(batch=batch)
    sections["extra"] = ReportSection("extra", extra_section, present=lambda b: b.pk == batch.pk)
    assert batch_has_sections(batch=batch)
    sections["extra"] = ReportSection("extra", extra_section)  # no check: the section always shows
    assert batch_has_sections(batch=batch)


def test_the_core_report_does_not_import_the_judges_package():
    modules = _modules()
    for name in (
        "annotator.reports.selectors.batch_report",
        "annotator.reports.selectors.sections",
        "annotator.reports.selectors.page",
        "annotator.reports.exports.json_export",
    ):
        reached = _imports(name, modules[name], modules)
        assert not [m for m in reached if m.startswith("annotator.judges")], name
    assert report_sections.__name__ in _imports(
        "annotator.judges.selectors.judges", modules["annotator.judges.selectors.judges"], modules
    )
