"""The README's Python workflow, run as written against a live server: create a batch from a
DataFrame, poll progress, read the report and the long annotations into DataFrames."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from annotator.models import Batch
from annotator.quality.services.exclusion import annotator_exclude
from annotator.reports.exports.json_export import report_to_dict
from annotator.reports.selectors.options import ReportOptions, report_with_options
from annotator.services.api_tokens import api_token_create
from tests.factories import make_annotation, make_user

README = Path(__file__).resolve().parents[3] / "README.md"
MARKER = "<!-- api-workflow: the test runs the next python block -->"
DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]


def readme_workflow() -> str:
    text = README.read_text(encoding="utf-8")
    assert MARKER in text, "the README lost the API workflow block"
    block = re.search(r"```python\n(.*?)```", text[text.index(MARKER) :], re.DOTALL)
    return block.group(1)


def test_the_block_is_about_fifteen_lines():
    code = [line for line in readme_workflow().splitlines() if line.strip()]
    assert len(code) <= 20, len(code)


@pytest.mark.django_db(transaction=True)
def test_readme_workflow_runs_against_the_live_server(live_server, monkeypatch, capsys):
    admin = make_user("api-admin", role="admin")
    monkeypatch.setenv("HCS_URL", live_server.url)
    monkeypatch.setenv("HCS_TOKEN", api_token_create(user=admin, name="readme", days=1)[1])
    polls = []

    def annotators_at_work(seconds):  # while the script waits, four people rate every item; one is excluded
        polls.append(seconds)
        batch = Batch.objects.get(name="eval run 42")
        for j in range(4):
            user = make_user(f"rater{len(polls)}-{j}")
            for i, item in enumerate(batch.items.order_by("position")):
                make_annotation(item, user, {d: 1 + (2 * i + j + n) % 5 for n, d in enumerate(DIMS)})
        annotator_exclude(batch=batch, annotator=user, reason="clicked at random")

    monkeypatch.setattr("time.sleep", annotators_at_work)
    namespace: dict = {}
    exec(compile(readme_workflow(), str(README), "exec"), namespace)  # noqa: S102 (our own README)

    assert polls == [60]  # not done at first; done after one wait
    assert "0.0 % rated" in capsys.readouterr().out
    batch = Batch.objects.get(name="eval run 42")
    assert batch.items.count() == 4 and batch.created_by == admin
    scores, agreement = namespace["scores"], namespace["agreement"]
    assert isinstance(scores, pd.DataFrame) and len(scores) == 4 * 3 * 5
    assert list(scores.columns) == [
        "annotation_id",
        "item_id",
        "system_id",
        "annotator",
        "dimension",
        "score",
        "overall_hcs",
        "submitted_at",
        "excluded",
    ]
    assert set(scores["system_id"]) == {"baseline", "candidate"}
    assert (
        "rater1-3" not in set(scores["annotator"]) and not scores["excluded"].any()
    )  # left out, as the report does
    expected = report_to_dict(
        report_with_options(batch=batch, options=ReportOptions(n_resamples=1000, epsilon=0.2))
    )
    assert namespace["report"] == expected
    assert list(agreement.index) == DIMS
    for dim in DIMS:
        kappa = expected["dimensions"][dim]["fleiss_kappa"]
        got = agreement.loc[dim, "fleiss_kappa"]
        assert (kappa is None and pd.isna(got)) or got == pytest.approx(kappa)
