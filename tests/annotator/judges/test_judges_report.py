"""The calibration section on the researcher report page and in the JSON, CSV and HTML exports."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotator.models import JudgeScore
from tests.annotator.judges.test_judges_selector import _add_scores, _study
from tests.factories import PASSWORD


@pytest.fixture
def judged(db):
    batch, _truth, human = _study()
    consensus = {i: float(sum(r.values()) / len(r)) for i, r in human.items()}
    judge = _add_scores("<b>consensus</b>", batch, consensus)
    # The G-Eval template's "1 = Excellent" trap: the same judge read the wrong way round.
    _add_scores("inverted", batch, {i: 6.0 - v for i, v in consensus.items()}, dimension="relevance")
    return batch, judge


def _login(client, user):
    assert client.login(username=user.username, password=PASSWORD)


def test_report_page_shows_calibration_escaped(client, researcher_user, judged):
    batch, _ = judged
    _login(client, researcher_user)
    page = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    # The page comes at once with an indicator; the judge sections follow from their own URL.
    assert "LLM judges against people" in page and "Computing the judges' calibration" in page
    assert "Human ceiling" not in page
    judges_url = reverse("report_judges", args=[batch.pk])
    assert f'hx-get="{judges_url}" hx-trigger="load"' in page
    assert reverse("report_export", args=[batch.pk, "judges.csv"]) in page
    # The <noscript> link: a page of its own, styled like the site.
    full = client.get(judges_url).content.decode()
    assert "css/app.css" in full and "<h1>LLM judges against people" in full and "Human ceiling" in full
    page = client.get(judges_url, headers={"HX-Request": "true"}).content.decode()  # htmx's swap
    assert page.lstrip().startswith('<section class="card" id="judges">')
    assert "&lt;b&gt;consensus&lt;/b&gt;" in page and "<b>consensus</b>" not in page
    assert "Human ceiling" in page
    assert "the judge can replace an annotator at ε = 0.2" in page
    assert "scale may be inverted" in page
    assert page.count('src="data:image/svg+xml;base64,') == 4  # scatter + confusion per judge × dimension


def test_report_page_without_judges(client, researcher_user, db):
    batch, _, _ = _study(n_items=3)
    _login(client, researcher_user)
    page = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    assert "No LLM-judge scores for this batch" in page


def test_json_export_schema(client, researcher_user, judged):
    batch, _ = judged
    _login(client, researcher_user)
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    entry = data["judges"]["<b>consensus</b>"]["coherence"]
    assert isinstance(entry["n"], int) and entry["n"] == 36
    for key in ("spearman", "kendall", "pearson", "mae", "bias", "qwk", "human_ceiling_spearman"):
        assert isinstance(entry[key], float), key
    assert len(entry["spearman_ci95"]) == 2 and all(isinstance(v, float) for v in entry["spearman_ci95"])
    alt = entry["alt_test"]
    assert isinstance(alt["winning_rate"], float) and isinstance(alt["advantage_probability"], float)
    assert alt["passed"] is True and alt["epsilon"] == 0.2
    assert data["judges"]["inverted"]["relevance"]["possibly_inverted"] is True
    assert data["judge_pairwise"] == {}


def test_csv_and_html_exports(client, researcher_user, judged):
    batch, _ = judged
    _login(client, researcher_user)
    text = client.get(reverse("report_export", args=[batch.pk, "judges.csv"])).content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {(r["judge"], r["dimension"]) for r in rows} == {
        ("<b>consensus</b>", "coherence"),
        ("inverted", "relevance"),
    }
    assert float(rows[0]["spearman"]) > 0.8 or float(rows[1]["spearman"]) > 0.8
    html = client.get(reverse("report_export", args=[batch.pk, "html"])).content.decode()
    assert "LLM judges against people" in html and "judges page" not in html
    assert 'src="data:image/svg+xml;base64,' in html


def test_export_report_command_epsilon(judged, tmp_path):
    batch, _ = judged
    out = tmp_path / "r.json"
    call_command(
        "export_report",
        batch.name,
        "--format",
        "json",
        "--resamples",
        "20",
        "--epsilon",
        "0.05",
        "--out",
        str(out),
    )
    data = json.loads(out.read_text())
    assert data["judges"]["<b>consensus</b>"]["coherence"]["alt_test"]["epsilon"] == 0.05
    out_csv = tmp_path / "j.csv"
    call_command(
        "export_report",
        batch.name,
        "--format",
        "csv",
        "--table",
        "judges",
        "--resamples",
        "20",
        "--out",
        str(out_csv),
    )
    assert out_csv.read_text().startswith("judge,dimension,n,spearman")
    assert JudgeScore.objects.count() == 72


def test_json_export_carries_the_judge_statistics_at_full_precision(client, researcher_user, judged):
    """Issue 10, defect 4: the judges section was rounded to 4 decimals while the agreement section was not."""
    from annotator.reports.selectors.batch_report import batch_report

    batch, _ = judged
    _login(client, researcher_user)
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    section = batch_report(batch=batch).sections["judges"]
    calibration = next(
        r.calibration for r in section.rows if r.judge == "<b>consensus</b>" and r.dimension == "coherence"
    )
    entry = data["judges"]["<b>consensus</b>"]["coherence"]
    exact = {
        "spearman": calibration.spearman,
        "kendall": calibration.kendall,
        "pearson": calibration.pearson,
        "mae": calibration.mae,
        "bias": calibration.bias,
        "qwk": calibration.qwk,
        "human_ceiling_spearman": calibration.human_ceiling_spearman,
        "alpha_humans": calibration.alpha_humans,
        "alpha_humans_plus_judge": calibration.alpha_with_judge,
    }
    for key, value in exact.items():
        assert entry[key] == float(value), key  # the same float, not a rounded copy
    assert entry["spearman_ci95"] == [float(v) for v in calibration.spearman_ci95]
    assert entry["alt_test"]["winning_rate"] == float(calibration.alt_test.winning_rate)
    # The data make several statistics carry more than 4 decimals, so rounding could not pass unnoticed.
    assert any(v != round(v, 4) for v in [*(float(x) for x in exact.values()), *entry["spearman_ci95"]])
