"""Report exports: JSON schema without NaN, CSV defusing, tidy scores, the command, round trip."""

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotator.models import Batch, Item
from annotator.reports.exports.csv_safe import SafeWriter, defuse, undefuse
from annotator.reports.exports.csv_tables import (
    DIMENSION_COLUMNS,
    SCORES_COLUMNS,
    dimensions_csv,
    scores_csv,
)
from annotator.reports.exports.json_export import report_json, report_to_dict
from annotator.reports.selectors.batch_report import batch_report
from hcs.agreement import counts_from_long, dimension_agreement, first_k_counts
from hcs.rubric import Rubric
from tests.factories import make_annotation, make_batch, make_user
from tests.hanna import HANNA_HUMAN as HANNA

DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]
ROOT = Path(__file__).resolve().parents[3]


def _fill(batch, table, comments=None):
    """table: {item position: [scores per annotator]} on every dimension."""
    items = list(Item.objects.filter(batch=batch).order_by("position"))
    users = {}
    now = timezone.now()
    for i, scores in table.items():
        for j, score in enumerate(scores):
            if score is None:
                continue
            user = users.get(j) or users.setdefault(j, make_user(f"{batch.name}-a{j}"))
            values = {d: max(1, min(5, score + (n % 2))) for n, d in enumerate(DIMS)}
            make_annotation(
                items[i], user, values, submitted_at=now, comment=(comments or {}).get((i, j), "")
            )
    return items


@pytest.fixture
def batch(db):
    batch = make_batch("exports", n_items=6, k=3, systems=("base", "tuned"))
    _fill(batch, {0: [5, 5, 4], 1: [2, 3, 3, 4], 2: [1, 1, 1], 3: [4, 5, 5], 4: [3, None, 2], 5: [5, 5, 5]})
    return batch


# ------------------------------------------------------------------ JSON
def test_json_has_the_documented_keys(batch):
    data = json.loads(report_json(batch_report(batch=batch, n_resamples=100)))
    assert {"batch", "k", "n_items", "n_annotations", "dimensions", "overall_hcs", "annotators"} <= set(data)
    assert data["n_items"] == 6 and data["n_annotations"] == 18
    dim = data["dimensions"]["coherence"]
    for key, kind in [
        ("fleiss_kappa", float),
        ("fleiss_items_used", int),
        ("krippendorff_alpha_ordinal", float),
        ("krippendorff_alpha_interval", float),
        ("gwet_ac2", float),
        ("percent_agreement", float),
    ]:
        assert isinstance(dim[key], kind), key
    assert len(dim["fleiss_kappa_ci95"]) == 2 and dim["fleiss_items_used"] == 5  # item 4 has only 2 ratings
    by_system = data["overall_hcs"]["by_system"]
    assert set(by_system) == {"base", "tuned"}
    assert set(by_system["base"]) >= {"mean", "ci95", "n_items"}
    assert isinstance(data["annotators"], list) and data["annotators"][0]["annotator"] == "exports-a0"


def test_json_never_contains_nan(db):
    batch = make_batch("flat", n_items=3, k=3)
    _fill(batch, {0: [5, 5, 5], 1: [5, 5, 5], 2: [5, 5, 5]})  # no variation: κ, α undefined
    text = report_json(batch_report(batch=batch, n_resamples=50))
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert data["dimensions"]["coherence"]["fleiss_kappa"] is None
    assert data["dimensions"]["coherence"]["fleiss_kappa_ci95"] is None


def test_json_equals_hcs_on_the_exported_long_csv(batch):
    """A researcher loading the long CSV into pandas and calling hcs gets the JSON's numbers."""
    data = report_to_dict(batch_report(batch=batch, n_resamples=300, seed=4))
    long = pd.read_csv(io.StringIO("".join(scores_csv(batch=batch))))
    assert list(long.columns) == SCORES_COLUMNS
    for j, dim in enumerate(DIMS):
        rows = long[long.dimension == dim]
        counts = counts_from_long(rows.item_id.to_numpy(), rows.score.to_numpy(), [1, 2, 3, 4, 5])
        fleiss = first_k_counts(
            rows.item_id.to_numpy(),
            rows.score.to_numpy(),
            [1, 2, 3, 4, 5],
            k=3,
            order=pd.to_datetime(rows.submitted_at).to_numpy(),
        )
        expected = dimension_agreement(counts, fleiss, [1, 2, 3, 4, 5], k=3, n_resamples=300, seed=4 + j)
        got = data["dimensions"][dim]
        assert got["fleiss_kappa"] == pytest.approx(expected.fleiss_kappa)
        assert got["krippendorff_alpha_ordinal"] == pytest.approx(expected.alpha_ordinal)
        assert got["gwet_ac2"] == pytest.approx(expected.gwet_ac2)
        assert got["gwet_ac2_ci95"] == pytest.approx(list(expected.gwet_ac2_ci95))
        assert got["fleiss_kappa_ci95"] == pytest.approx(list(expected.fleiss_kappa_ci95))
    assert long.overall_hcs.notna().all()
    assert pd.to_datetime(long.submitted_at).notna().all()


# ------------------------------------------------------------------ CSV
@pytest.mark.parametrize(
    "cell, expected",
    [
        ("=1+1", "'=1+1"),
        ("+CMD", "'+CMD"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-0.25", "-0.25"),
        ("+3", "+3"),
        ("1e-3", "1e-3"),
        (-1.5, "-1.5"),
        (float("nan"), ""),
        (None, ""),
        ("safe = text", "safe = text"),
    ],
)
def test_defuse(cell, expected):
    assert defuse(cell) == expected


def test_undefuse_reverses_defuse():
    for text in ["=1+1", "-- note", "@x", "plain", "'quoted", "-3"]:
        assert undefuse(defuse(text)) == text


def test_safe_writer_defuses_every_cell():
    out = io.StringIO()
    SafeWriter(out).writerow(["=HYPERLINK(1)", -2, "ok"])
    assert out.getvalue() == "'=HYPERLINK(1),-2,ok\r\n"


def test_dimension_table_csv(batch):
    text = "".join(dimensions_csv(batch_report(batch=batch, n_resamples=50)))
    table = pd.read_csv(io.StringIO(text))
    assert list(table.columns) == DIMENSION_COLUMNS and list(table.dimension) == DIMS
    assert table.fleiss_items_used.tolist() == [5] * 5


def test_scores_csv_defuses_user_text(db):
    batch = make_batch("=evil", n_items=3, k=3, systems=("-sys", "@sys"))
    _fill(batch, {0: [1, 2, 3], 1: [3, 3, 3], 2: [2, 2, 5]})
    Item.objects.filter(batch=batch, position=0).update(item_id="=cmd|' /C calc'!A0")
    long = pd.read_csv(io.StringIO("".join(scores_csv(batch=batch))))
    assert len(long) == 9 * 5
    assert (long.item_id == "'=cmd|' /C calc'!A0").sum() == 15
    assert set(long.system_id) == {"'-sys", "'@sys"}
    assert long.score.dtype.kind == "i" and long.overall_hcs.dtype.kind == "f"


# ------------------------------------------------------------------ command
def test_export_report_command_formats(batch, tmp_path):
    out = tmp_path / "r.json"
    call_command("export_report", "exports", "--format", "json", "--out", str(out), "--resamples", "50")
    assert json.loads(out.read_text())["batch"] == "exports"
    buf = io.StringIO()
    call_command("export_report", str(batch.pk), "--format", "csv", "--table", "scores", stdout=buf)
    assert buf.getvalue().startswith(",".join(SCORES_COLUMNS))
    buf = io.StringIO()
    call_command("export_report", "exports", "--format", "html", "--resamples", "0", stdout=buf)
    assert buf.getvalue().lstrip().startswith("<!doctype html>") and "<svg" in buf.getvalue()
    buf = io.StringIO()
    call_command("export_report", "exports", "--format", "csv", stdout=buf)
    assert buf.getvalue().startswith(",".join(DIMENSION_COLUMNS))


def test_export_report_unknown_batch_names_the_batches(batch):
    with pytest.raises(CommandError, match="No batch named 'nope'. Batches: exports"):
        call_command("export_report", "nope")


# ------------------------------------------------------------------ round trip
def test_annotations_export_matches_the_template_columns(batch, tmp_path):
    template = (ROOT / "templates" / "annotation_template.csv").read_text(encoding="utf-8").splitlines()[0]
    out = tmp_path / "a.csv"
    call_command("export_report", "exports", "--format", "csv", "--table", "annotations", "--out", str(out))
    assert (
        out.read_text(encoding="utf-8").splitlines()[0] == template + ",excluded"
    )  # the template's, then the mark


def _comparable(report):
    data = report_to_dict(report)
    data.pop("batch")
    # The queue's order is the batch's own (a copy gets a seed of its own); the rest must match.
    data["methods"] = re.sub(r"Items were handed out in [^.]*?(\([^)]*\))?\. ", "", data["methods"])
    return data


def test_export_then_import_gives_the_same_report(batch, tmp_path):
    Item.objects.filter(batch=batch, position=2).update(
        prompt='Line one\n"quoted", with commas', response="Ünïcode ✓"
    )
    # The annotation template carries no prompt_id: the copy pairs systems by prompt text, so the other
    # system's answer to that prompt (position 3) gets the same text and the comparisons stay the same.
    Item.objects.filter(batch=batch, position=3).update(prompt='Line one\n"quoted", with commas')
    out = tmp_path / "annotations.csv"
    call_command("export_report", "exports", "--format", "csv", "--table", "annotations", "--out", str(out))
    call_command("import_annotations", str(out), "--batch", "exports-copy", "--k", "3", stdout=io.StringIO())
    copy = Batch.objects.get(name="exports-copy")
    assert Item.objects.get(batch=copy, item_id="exports-2").prompt == 'Line one\n"quoted", with commas'
    original = _comparable(batch_report(batch=batch, n_resamples=200))
    again = _comparable(batch_report(batch=copy, n_resamples=200))
    assert again == original


# ------------------------------------------------------------------ HANNA, a real study


@pytest.mark.slow
@pytest.mark.django_db
def test_hanna_report_equals_direct_library_calls():
    """HANNA (Chhun et al., COLING 2022): 1,056 stories × 3 raters × 6 criteria, loaded with a
    six-dimension rubric; every coefficient from the database equals the libraries on the file."""
    import krippendorff
    from irrCAC.raw import CAC
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    from annotator.models import Annotation, Score

    df = pd.read_csv(HANNA)
    criteria = sorted(df.criterion.unique())
    base = Rubric.default().to_dict()
    levels = base["dimensions"][0]["levels"]
    base["dimensions"] = [
        {"key": c.lower(), "label": c, "weight": 1 / len(criteria), "levels": levels} for c in criteria
    ]
    base["rules"], base["flags"], base["exclusive_flags"] = [], [], []
    base["name"] = "hanna"
    batch = Batch.objects.create(name="hanna", rubric=base, k=3)
    stories = df[["story_id", "model"]].drop_duplicates().reset_index(drop=True)
    Item.objects.bulk_create(
        Item(
            batch=batch,
            item_id=f"{r.story_id}-{r.model}",
            position=i,
            prompt="(story prompt)",
            response="(story text)",
            system_id=r.model,
        )
        for i, r in enumerate(stories.itertuples())
    )
    items = dict(Item.objects.filter(batch=batch).values_list("item_id", "pk"))
    raters = {slot: make_user(slot) for slot in df.rater.unique()}
    now = timezone.now()
    keys = sorted({(f"{r.story_id}-{r.model}", r.rater) for r in df.itertuples()})
    Annotation.objects.bulk_create(
        Annotation(item_id=items[i], annotator=raters[slot], submitted_at=now, source="import")
        for i, slot in keys
    )
    ann = {
        (a[0], a[1]): a[2]
        for a in Annotation.objects.filter(item__batch=batch).values_list(
            "item__item_id", "annotator__username", "pk"
        )
    }
    Score.objects.bulk_create(
        Score(
            annotation_id=ann[(f"{r.story_id}-{r.model}", r.rater)],
            item_id=items[f"{r.story_id}-{r.model}"],
            dimension=r.criterion.lower(),
            value=r.score,
        )
        for r in df.itertuples()
    )
    report = batch_report(batch=batch, n_resamples=100)
    assert report.n_items == 1056 and report.n_annotations == 1056 * 3
    for row in report.dimensions:
        wide = df[df.criterion == row.label].pivot(
            index=["story_id", "model"], columns="rater", values="score"
        )
        table, _ = aggregate_raters(wide.to_numpy())
        a = row.agreement
        assert a.fleiss_kappa == pytest.approx(fleiss_kappa(table), abs=1e-12)
        assert a.alpha_ordinal == pytest.approx(
            krippendorff.alpha(reliability_data=wide.to_numpy().T, level_of_measurement="ordinal"), abs=1e-12
        )
        assert a.alpha_interval == pytest.approx(
            krippendorff.alpha(reliability_data=wide.to_numpy().T, level_of_measurement="interval"), abs=1e-12
        )
        gwet = CAC(
            wide.reset_index(drop=True), weights="ordinal", categories=[1, 2, 3, 4, 5], digits=15
        ).gwet()
        assert a.gwet_ac2 == pytest.approx(gwet["est"]["coefficient_value"], abs=1e-12)
    assert len(report.systems) == 11 and np.isfinite([s.mean for s in report.systems]).all()


# ------------------------------------------------------------------ plots
def test_plot_svg_escapes_labels_and_makes_no_requests():
    import re

    from annotator.plots import distribution_svg

    svg = distribution_svg(
        '<script>alert("x")</script> & $\\frac{1}{2}$', [1, 2, 3, 4, 5], [0, 1, 5, 9, 3], mean=3.8
    )
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert "$" in svg  # shown as text, not typeset as mathtext
    assert not re.search(r"""(src|href)\s*=\s*["']https?:""", svg)
    assert distribution_svg("C", [1, 2], [1, 1]) == distribution_svg("C", [1, 2], [1, 1])  # stable ids


def test_items_csv_and_item_page_show_overall_mean_and_spread(batch, client, researcher_user):
    from django.urls import reverse

    from annotator.reports.exports.csv_tables import ITEMS_COLUMNS, items_csv
    from tests.factories import PASSWORD

    table = pd.read_csv(io.StringIO("".join(items_csv(batch_report(batch=batch, n_resamples=0)))))
    assert list(table.columns) == ITEMS_COLUMNS and len(table) == 6
    row = table[table.item_id == "exports-0"].iloc[0]
    # Scores 5, 5, 4 with +1 on every other dimension, capped at 5.
    rubric = Rubric.default()
    overall = [rubric.overall({d: min(5, s + (n % 2)) for n, d in enumerate(DIMS)}) for s in (5, 5, 4)]
    assert row.overall_hcs_mean == pytest.approx(np.mean(overall))
    assert row.overall_hcs_sd == pytest.approx(np.std(overall, ddof=1))
    assert row.n_annotations == 3
    client.login(username=researcher_user.username, password=PASSWORD)
    item = Item.objects.get(batch=batch, item_id="exports-0")
    html = client.get(reverse("report_item", args=[item.pk])).content.decode()
    assert f"overall HCS {np.mean(overall):.2f} (SD {np.std(overall, ddof=1):.2f})" in html
