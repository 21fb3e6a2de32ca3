"""Pairwise judges in the report: each pair counted once, order consistency apart, the tie margin and the
agreement's interval in the JSON; unreadable calls not counted; judges.csv after a --swap run."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy.stats import binomtest

from annotator.models import Judge, JudgeCall, PairwiseVerdict
from annotator.reports.selectors.batch_report import batch_report
from tests.annotator.judges.test_judges_selector import _study
from tests.annotator.judges.test_run_judge_pairwise import first_shown_wins, geval_reply
from tests.factories import PASSWORD
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge


def run(fake, *extra):
    pairs = ("--pairwise", "--baseline-system", "base", "--enhanced-system", "new")
    run_judge(fake, "judged", *pairs, *extra, template="geval_pairwise", model="m")


@pytest.fixture
def swapped(db):
    batch, _truth, _human = _study(n_items=24, systems=("base", "new"))  # 12 pairs, all rated by 3 people
    with FakeJudge(first_shown_wins) as fake:
        run(fake, "--swap")
    return batch


def _json(client, researcher_user, batch):
    assert client.login(username=researcher_user.username, password=PASSWORD)
    response = client.get(reverse("report_export", args=[batch.pk, "json"]))
    assert response.status_code == 200
    return json.loads(response.content)


def test_a_swap_run_counts_each_pair_once_and_reports_order_consistency_apart(
    client, researcher_user, swapped
):
    assert PairwiseVerdict.objects.count() == 24
    assert set(
        PairwiseVerdict.objects.filter(swapped=True).values_list("baseline__system_id", flat=True)
    ) == {"new"}
    (entry,) = _json(client, researcher_user, swapped)["judge_pairwise"].values()
    assert (entry["n_verdicts"], entry["n_pairs"], entry["n"]) == (24, 12, 12)  # not n = 24
    assert entry["order_consistency"]["n_pairs_both_orders"] == 12
    assert entry["order_consistency"]["consistency"] == 0  # the first shown always wins: never consistent
    # inconsistent pairs are ties (the conservative rule): the judge said "tie" for all 12
    assert sum(row[2] for row in entry["table"]) == 12
    assert entry["tie_margin"] == 0.25 and "tie_margin" in entry["counting"]
    hits = round(entry["agreement"] * entry["n"])
    reference = binomtest(hits, entry["n"]).proportion_ci(confidence_level=0.95, method="wilson")
    assert entry["agreement_ci_method"] == "wilson"
    assert entry["agreement_ci95"] == pytest.approx([reference.low, reference.high], abs=1e-12)
    page = client.get(reverse("report_judges", args=[swapped.pk])).content.decode()
    assert "Each pair counts once" in page and "0 of 12" in page


def test_judges_csv_after_a_swap_run(client, researcher_user, swapped, tmp_path):
    out = tmp_path / "judges.csv"
    call_command(
        "export_report",
        swapped.name,
        "--format",
        "csv",
        "--table",
        "judges",
        "--resamples",
        "10",
        "--out",
        str(out),
    )
    assert out.read_text(encoding="utf-8").startswith("judge,dimension,n,spearman")  # header, no KeyError
    assert client.login(username=researcher_user.username, password=PASSWORD)
    response = client.get(reverse("report_export", args=[swapped.pk, "judges.csv"]))
    assert response.status_code == 200
    assert next(csv.reader(io.StringIO(response.content.decode())))[0] == "judge"


def test_a_verdict_whose_call_was_unreadable_is_not_counted(client, researcher_user, db):
    batch, _truth, _human = _study(n_items=8, systems=("base", "new"))
    with FakeJudge(geval_reply) as fake:
        run(fake)
    (entry,) = _json(client, researcher_user, batch)["judge_pairwise"].values()
    assert entry["n"] == 4
    # a verdict saved before unreadable calls stopped keeping one: its call says unreadable
    call = JudgeCall.objects.filter(judge=Judge.objects.get()).order_by("id").first()
    JudgeCall.objects.filter(pk=call.pk).update(status=JudgeCall.UNREADABLE)
    assert PairwiseVerdict.objects.count() == 4
    section = batch_report(batch=batch).sections["judge_pairwise"]
    assert section.rows[0].comparison.n == 3
