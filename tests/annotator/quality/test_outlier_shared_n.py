"""The report's annotator tables show the shared-item n beside each ρ, and flag no one on fewer than
MIN_SHARED_ITEMS shared items (the page, the QC signals and the JSON export)."""

import json
import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.reports.exports.formats import EXPORT_FORMATS, export_chunks
from hcs.quality_rules import MIN_SHARED_ITEMS
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db
DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]


@pytest.fixture
def batch():
    batch = make_batch("overlap", n_items=12, k=6, constraints=())
    items = list(batch.items.order_by("position"))
    for a in range(4):
        user = make_user(f"careful{a}")
        for i, item in enumerate(items):
            make_annotation(
                item,
                user,
                {d: 1 + (i + (a == n)) % 5 for n, d in enumerate(DIMS)},
                submitted_at=timezone.now(),
            )
    tiny = make_user("tiny")
    for i, item in enumerate(items[:3]):  # three shared items, in reverse: ρ = −1
        make_annotation(item, tiny, {d: 5 - i % 5 for d in DIMS}, submitted_at=timezone.now())
    return batch


def test_the_page_shows_n_and_does_not_flag_a_tiny_overlap(batch):
    client = Client()
    client.force_login(make_user("reader", role="researcher"))
    html = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    row = re.search(r"<tr>\s*<td>tiny</td>.*?</tr>", html, re.DOTALL).group(0)
    assert "-1.00" in row and "n&nbsp;=&nbsp;3" in row
    assert "outlier" not in row and f"too few shared items to flag (3 of {MIN_SHARED_ITEMS})" in row
    careful = re.search(r"<tr>\s*<td>careful0</td>.*?</tr>", html, re.DOTALL).group(0)
    assert "n&nbsp;=&nbsp;12" in careful
    signals = re.search(r'<table id="annotator-signals">.*?</table>', html, re.DOTALL).group(0)
    tiny_signals = re.search(r"<tr>\s*<td>tiny</td>.*?</tr>", signals, re.DOTALL).group(0)
    rho_cell = re.search(
        r'<td class="([^"]*)" title="flag &lt; 0.2 on[^"]*">-1.00 <span[^>]*>n&nbsp;=&nbsp;3<', tiny_signals
    )
    assert rho_cell is not None and rho_cell.group(1) == "num"  # shown, not flagged


def test_the_json_export_carries_n_shared(batch):
    report = json.loads("".join(export_chunks(EXPORT_FORMATS["json"], batch=batch)))
    tiny = next(a for a in report["annotators"] if a["annotator"] == "tiny")
    assert tiny["n_shared"]["overall"] == 3 and tiny["spearman_loo"]["overall"] == -1.0
    assert tiny["outlier"] is False
