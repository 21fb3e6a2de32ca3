"""The report's ``comparisons``: paired differences B − A by prompt and their PPI++ version, in the JSON, the
page and ``comparisons.csv``, checked against the same statistics computed here from the scores."""

import csv
import io
import json

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from annotator.models import Batch, Judge, JudgeScore
from annotator.reports.exports.formats import EXPORT_FORMATS, export_bytes
from annotator.reports.exports.json_export import report_json
from annotator.reports.selectors.batch_report import batch_report
from annotator.reports.selectors.comparisons import (
    WHY_DRAW,
    ComparisonsSection,
    comparisons_report,
    comparisons_revision,
    comparisons_section,
)
from annotator.reports.selectors.sections import REPORT_SECTIONS
from annotator.reports.selectors.stored import _schema_roots, report_schema_version, schema_classes
from hcs.ranking.paired import ppi_paired_difference
from hcs.rubric import Rubric
from tests.factories import PASSWORD, make_annotation, make_batch, make_user

RUBRIC = Rubric.default()
DIMS = RUBRIC.dimension_keys
WEIGHTS = {d.key: d.weight for d in RUBRIC.dimensions}
KEYS = {"system_a", "system_b", "dimension", "mean_difference", "ci95", "n_prompts", "ppi"}


def _batch(n_prompts=16, rated=10, systems=("zeta", "alpha"), declared_random=True, judge=True, seed=1):
    """Items of ``systems`` on ``n_prompts`` prompts; two people rate every system's item on the first
    ``rated`` prompts (the prompts vary in difficulty, B a little better); a judge scores every item.
    Returns the batch and the scores: {(system, prompt): [{dim: score} per person]} and {(system, prompt): {dim: judge score}}."""
    batch = make_batch("cmp", n_items=n_prompts * len(systems), systems=systems)
    Batch.objects.filter(pk=batch.pk).update(labels_declared_random=declared_random)
    batch.refresh_from_db()
    rng = np.random.default_rng(seed)
    users = [make_user("r1"), make_user("r2")]
    human, judged = {}, {}
    difficulty = {p: rng.normal(3, 0.8) for p in range(n_prompts)}
    judge_row = Judge.objects.create(name="judge-1") if judge else None
    for item in batch.items.order_by("position"):
        p = int(item.prompt_id[1:])
        shift = 0.4 if item.system_id == "zeta" else 0.0
        truth = difficulty[p] + shift
        if p < rated:
            for user in users:
                scores = {d: int(np.clip(round(truth + rng.normal(0, 0.7)), 1, 5)) for d in DIMS}
                make_annotation(item, user, scores)
                human.setdefault((item.system_id, p), []).append(scores)
        if judge_row is not None:
            values = {d: float(np.clip(truth + rng.normal(0, 0.5), 1, 5)) for d in DIMS}
            JudgeScore.objects.bulk_create(
                JudgeScore(
                    judge=judge_row, item=item, dimension=d, raw_value=v, scale_min=1, scale_max=5, value=v
                )
                for d, v in values.items()
            )
            judged[(item.system_id, p)] = values
    return batch, human, judged


@pytest.fixture
def sections():
    """The table, put back as it was, in its order, after the test."""
    kept = dict(REPORT_SECTIONS)
    yield REPORT_SECTIONS
    REPORT_SECTIONS.clear()
    REPORT_SECTIONS.update(kept)
    report_schema_version.cache_clear()


def _value(scores: dict, dimension: str) -> float:
    if dimension == "overall":
        return sum(WEIGHTS[d] * scores[d] for d in DIMS)
    return scores[dimension]


def _expected(human, judged, a, b, dimension, n_prompts):
    """The difference B − A from the scores: numpy means, scipy's paired t-test interval, and the PPI++ arrays."""
    rated = sorted({p for (_s, p) in human})
    ha = np.array([np.mean([_value(s, dimension) for s in human[(a, p)]]) for p in rated])
    hb = np.array([np.mean([_value(s, dimension) for s in human[(b, p)]]) for p in rated])
    ci = stats.ttest_rel(hb, ha).confidence_interval(0.95)
    rest = [p for p in range(n_prompts) if p not in rated]
    ja = np.array([_value(judged[(a, p)], dimension) for p in rated])
    jb = np.array([_value(judged[(b, p)], dimension) for p in rated])
    ua = np.array([_value(judged[(a, p)], dimension) for p in rest])
    ub = np.array([_value(judged[(b, p)], dimension) for p in rest])
    return (hb - ha).mean(), (ci.low, ci.high), len(rated), (ha, hb, ja, jb, ua, ub)


@pytest.mark.django_db
def test_the_json_comparisons_equal_the_paired_statistics_computed_from_the_scores():
    batch, human, judged = _batch()
    data = json.loads(report_json(batch_report(batch=batch, n_resamples=20)))
    comparisons = data["comparisons"]
    assert [(c["system_a"], c["system_b"], c["dimension"]) for c in comparisons] == [
        ("alpha", "zeta", d) for d in (*DIMS, "overall")
    ]
    for c in comparisons:
        assert KEYS <= set(c) and {"estimate", "ci95"} <= set(c["ppi"])
        mean, ci, n, arrays = _expected(human, judged, "alpha", "zeta", c["dimension"], 16)
        assert c["n_prompts"] == n == 10
        assert c["mean_difference"] == pytest.approx(mean, abs=1e-12)
        assert c["ci95"] == pytest.approx(list(ci), abs=1e-9)
        ppi = ppi_paired_difference(*arrays)
        assert c["ppi"]["estimate"] == pytest.approx(ppi["estimate"], abs=1e-12)
        assert c["ppi"]["ci95"] == pytest.approx(ppi["ci95"], abs=1e-12)
        assert c["ppi"]["judge"] == "judge-1" and c["ppi"]["sample"] == "declared_random"
        assert c["ppi"]["n_prompts_labelled"] == 10 and c["ppi"]["n_prompts_unlabelled"] == 6
        assert c["ppi"]["withheld_because"] is None
        # PPI++ is the mean of the differences' rectified judge predictions: the reference library agrees.
        ppi_py = pytest.importorskip("ppi_py")
        ha, hb, ja, jb, ua, ub = arrays
        assert c["ppi"]["estimate"] == pytest.approx(
            float(ppi_py.ppi_mean_pointestimate(hb - ha, jb - ja, ub - ua)[0]), abs=1e-9
        )
    overall = comparisons[-1]
    assert overall["mean_difference"] > 0  # B (zeta) was planted 0.4 better


@pytest.mark.django_db
def test_three_systems_give_each_pair_once_b_minus_a_by_name():
    batch, _human, _judged = _batch(n_prompts=6, rated=6, systems=("b", "c", "a"), judge=False)
    section = batch_report(batch=batch, n_resamples=10).sections["comparisons"]
    pairs = [(c.system_a, c.system_b) for c in section.comparisons if c.dimension == "overall"]
    assert pairs == [("a", "b"), ("a", "c"), ("b", "c")]
    (first,) = [
        c for c in section.comparisons if (c.system_a, c.system_b, c.dimension) == ("a", "b", "overall")
    ]
    assert (
        first.ppi.estimate is None
        and first.ppi.withheld_because == "no judge scored both systems on this dimension"
    )


@pytest.mark.django_db
def test_ppi_is_withheld_with_the_reason_when_the_labelled_set_is_not_random():
    batch, human, judged = _batch(declared_random=False)
    data = json.loads(report_json(batch_report(batch=batch, n_resamples=20)))
    judges_sample = data["judges"]["judge-1"]["coherence"]["ppi"]
    assert judges_sample["sample"] == "not_random" and judges_sample["estimate"] is None
    for c in data["comparisons"]:
        assert c["ppi"]["estimate"] is None and c["ppi"]["ci95"] == [None, None]
        assert c["ppi"]["sample"] == "not_random"
        assert c["ppi"]["withheld_because"].startswith("the labelled set is not a random sample: ")
        assert judges_sample["sample_why"] in c["ppi"]["withheld_because"]
        assert c["mean_difference"] is not None  # people's own paired difference needs no sample
        mean, ci, _n, _arrays = _expected(human, judged, "alpha", "zeta", c["dimension"], 16)
        assert c["mean_difference"] == pytest.approx(mean, abs=1e-12)


@pytest.mark.django_db
def test_ppi_is_withheld_without_the_judges_section(sections):
    batch, _human, _judged = _batch(n_prompts=6, rated=4)
    del sections["judges"]
    section = batch_report(batch=batch, n_resamples=10).sections["comparisons"]
    assert {c.ppi.withheld_because for c in section.comparisons} == {
        "the judges section, which says whether the labelled set is a random sample, is not in this report"
    }


@pytest.mark.django_db
def test_one_system_gives_no_comparisons_and_says_why(client, researcher_user):
    batch = make_batch("single", n_items=4)
    make_annotation(batch.items.first(), make_user("r1"), dict.fromkeys(DIMS, 3))
    section = batch_report(batch=batch, n_resamples=10).sections["comparisons"]
    assert section.comparisons == () and "one system" in section.why_none
    assert json.loads(report_json(batch_report(batch=batch, n_resamples=10)))["comparisons"] == []
    assert client.login(username=researcher_user.username, password=PASSWORD)
    page = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    assert (
        "Systems compared on the same prompts" in page
        and "No comparison: a comparison needs two systems" in page
    )


@pytest.mark.django_db
def test_systems_without_a_shared_prompt_give_no_comparison(client, researcher_user):
    batch = make_batch("apart", n_items=4, systems=("a", "b"))
    batch.items.filter(system_id="b").update(prompt_id="elsewhere")
    section = batch_report(batch=batch, n_resamples=10).sections["comparisons"]
    assert section.comparisons == () and "none is shared" in section.why_none
    assert client.login(username=researcher_user.username, password=PASSWORD)
    part = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "No comparison: no two systems answer the same prompt" in part


@pytest.mark.django_db
def test_the_page_shows_the_section(client, researcher_user):
    batch, _human, _judged = _batch(n_prompts=6, rated=4, systems=("<b>x</b>", "a"))
    assert client.login(username=researcher_user.username, password=PASSWORD)
    page = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    assert f'hx-get="{reverse("report_judges", args=[batch.pk])}"' in page
    assert reverse("report_export", args=[batch.pk, "comparisons.csv"]) in page
    part = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "Systems compared on the same prompts" in part and "B − A</th>" in part
    assert "&lt;b&gt;x&lt;/b&gt;" in part and "<b>x</b>" not in part  # system ids are escaped
    section = batch_report(batch=batch).sections["comparisons"]
    first = section.comparisons[0]
    assert f"{first.mean_difference:.3f}" in part and f"[{first.ci95[0]:.3f}, {first.ci95[1]:.3f}]" in part
    assert f"{first.ppi.estimate:.3f}" in part


@pytest.mark.django_db
def test_a_batch_with_two_systems_and_no_judge_links_no_judge_export(client, researcher_user):
    batch = make_batch("nojudge", n_items=4, systems=("a", "b"))
    assert client.login(username=researcher_user.username, password=PASSWORD)
    page = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    judge_exports = [f for f in EXPORT_FORMATS.values() if f.judges]
    assert judge_exports and not any(
        reverse("report_export", args=[batch.pk, f.key]) in page for f in judge_exports
    )
    assert reverse("report_export", args=[batch.pk, "comparisons.csv"]) in page


@pytest.mark.django_db
def test_the_csv_export_has_the_comparisons_at_full_precision_with_formulas_defused():
    batch, _human, _judged = _batch(n_prompts=8, rated=5, systems=("=cmd()", "a"))
    report = batch_report(batch=batch, n_resamples=10)
    text = export_bytes(EXPORT_FORMATS["comparisons.csv"], batch=batch, report=report).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    section = report.sections["comparisons"]
    assert len(rows) == len(section.comparisons) == len(DIMS) + 1
    for row, c in zip(rows, section.comparisons):
        assert (row["system_a"], row["system_b"], row["dimension"]) == ("'=cmd()", "a", c.dimension)
        assert float(row["mean_difference"]) == c.mean_difference
        assert (float(row["ci95_low"]), float(row["ci95_high"])) == c.ci95
        assert float(row["ppi_estimate"]) == c.ppi.estimate and row["ppi_judge"] == "judge-1"
        assert int(row["n_prompts"]) == 5 and row["ppi_withheld_because"] == ""


def test_the_stored_schema_version_follows_the_sections_classes(sections):
    shape = schema_classes(_schema_roots())
    assert "annotator.reports.selectors.comparisons.Comparison" in shape
    assert "annotator.reports.selectors.comparisons.ComparisonPPI" in shape
    report_schema_version.cache_clear()
    before = report_schema_version()
    del sections["comparisons"]
    report_schema_version.cache_clear()
    assert report_schema_version() != before


def test_the_section_is_listed_after_the_judges_whose_sample_it_follows():
    names = list(REPORT_SECTIONS)
    assert names.index("judges") < names.index("comparisons")
    assert REPORT_SECTIONS["comparisons"].judges is False
    assert comparisons_section.__annotations__["return"] in ("ComparisonsSection", ComparisonsSection)


@pytest.mark.django_db
def test_a_recorded_draw_withholds_ppi_and_says_why():
    batch, _human, _judged = _batch(n_prompts=6, rated=4)
    arrays = batch_report(batch=batch, n_resamples=10).arrays
    why = "a review draw is in force"
    section = comparisons_report(batch=batch, arrays=arrays, sample=("recorded_draw", why, ""))
    assert {c.ppi.withheld_because for c in section.comparisons} == {WHY_DRAW}
    assert all(c.ppi.estimate is None and c.ppi.sample == "recorded_draw" for c in section.comparisons)
    given = comparisons_report(batch=batch, arrays=arrays, sample=("random_order", "random", ""))
    assert all(c.ppi.estimate is not None for c in given.comparisons)
    assert [c.mean_difference for c in given.comparisons] == [c.mean_difference for c in section.comparisons]


@pytest.mark.django_db
def test_the_revision_changes_with_the_items_and_the_judge_scores():
    batch, _human, _judged = _batch(n_prompts=4, rated=2)
    before = comparisons_revision(batch)
    JudgeScore.objects.filter(item__batch=batch).first().delete()
    after_score = comparisons_revision(batch)
    assert after_score != before
    # Prompt ids are set at upload (no page edits them; an edit in the Django admin is not noticed, as
    # docs/cache.md says): an item added or removed is.
    batch.items.filter(prompt_id="p3").first().delete()
    assert comparisons_revision(batch) != after_score


@pytest.mark.django_db
def test_the_page_says_once_why_ppi_is_withheld_everywhere(client, researcher_user):
    batch, _human, _judged = _batch(n_prompts=6, rated=4, declared_random=False)
    assert client.login(username=researcher_user.username, password=PASSWORD)
    part = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    section = batch_report(batch=batch).sections["comparisons"]
    reason = section.ppi_withheld_everywhere()
    assert reason.startswith("the labelled set is not a random sample: ")
    table = part[part.index('id="comparisons"') :]
    assert table.count("PPI++ is withheld: the labelled set is not a random sample") == 1
    assert table.count(">withheld</span>") == len(section.comparisons)
