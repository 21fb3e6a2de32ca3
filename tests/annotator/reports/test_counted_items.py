"""A count of one item reads "1 item", never "1 items": every message says its item counts through
``annotator.counted`` (in Python) or the ``counted`` template filter (in templates)."""

import re
from pathlib import Path

import pytest
from django.template import Context, Template

from annotator.judges.services.calibration_set import calibration_set_mark
from annotator.reports.exports.methods import methods_paragraph
from annotator.reports.selectors.batch_report import batch_report
from annotator.studies.planning import JudgePlan
from tests.factories import make_batch

ROOT = Path(__file__).resolve().parents[3]
# "{n} items" in an f-string, "{{ n }} items" in a template: a count whose noun does not follow it
PY_COUNT = re.compile(r"\{[^{}\"']+\} items\b")
TEMPLATE_COUNT = re.compile(r"\{\{[^}]+\}\} items\b")


def test_no_message_writes_a_count_before_a_fixed_plural():
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder, pattern, glob in (
            ("annotator", PY_COUNT, "*.py"),
            ("templates", TEMPLATE_COUNT, "*.html"),
        )
        for path in sorted((ROOT / folder).rglob(glob))
        if "migrations" not in path.parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_the_template_filter_says_one_item_and_two_items():
    template = Template('{% load counting %}{{ a|counted:"item,items" }}; {{ b|counted:"item,items" }}')
    assert template.render(Context({"a": 1, "b": 2})) == "1 item; 2 items"


@pytest.mark.django_db
def test_one_item_in_the_methods_paragraph_and_a_calibration_set():
    batch = make_batch("one", n_items=1)
    text = methods_paragraph(batch_report(batch=batch, n_resamples=0))
    assert text.startswith("No item of this batch (1 item, k = 3")
    chosen = calibration_set_mark(batch=batch, item_ids=["one-0"])
    assert chosen.how == "1 item chosen by id"


def test_the_planners_texts_count_in_the_right_number():
    plan = JudgePlan(
        ppi_labels={"overall": None}, alt_test_items=1, k=1, epsilon=0.2, target_width=0.1, items=1
    )
    assert plan.alt_test_text() == "1 item (1 label)"
    assert plan.ppi_label_texts() == [("overall", "no size reaches it (not even all 1 item labelled)")]
