"""The per-dimension statistics of every report output, pinned on one fixture batch: the JSON
``dimensions`` (keys, order, values in full precision), the dimension CSV (header and rows), the HTML
agreement table, the methods paragraph and the dataset card's agreement section.

The pinned files in ``pinned/`` were written by the code before the statistics became one table, so
these tests prove that the table writes the same outputs. A statistic added to the table since
(``ADDED``: its key is not in the pinned JSON) adds its own keys, columns and words; each test checks
they are there, takes them out, and compares the rest byte for byte. ``PIN_UPDATE=1`` rewrites the
files (only while nothing is added).
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annotator.models import Item
from annotator.reports.exports.csv_tables import dimensions_csv
from annotator.reports.exports.html_export import report_html
from annotator.reports.exports.json_export import report_to_dict
from annotator.reports.exports.methods import methods_paragraph
from annotator.reports.hf.card import dataset_card
from annotator.reports.selectors.batch_report import batch_report
from annotator.reports.statistics import AGREEMENT_STATISTICS, card_headers
from tests.factories import make_annotation, make_batch, make_user

PINNED = Path(__file__).parent / "pinned"
DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]
# Scores per item and annotator on each dimension: varied, one dimension without variation (undefined
# coefficients, no intervals) and items rated fewer than k = 3 times (left out of Fleiss' κ).
TABLE = {
    "coherence": {0: [5, 5, 4], 1: [2, 3, 3, 4], 2: [1, 1, 1], 3: [4, 5, 5], 4: [3, None, 2], 5: [5, 5, 5]},
    "relevance": {0: [4, 4, 4], 1: [3, 3, 2, 2], 2: [2, 1, 1], 3: [5, 5, 4], 4: [3, None, 3], 5: [4, 5, 5]},
    "instruction_following": {0: [5, 4, 3], 1: [1, 2, 3, 4], 2: [3, 3, 3], 3: [2, 5, 1], 4: [4, None, 4]},
    "safety_compliance": {0: [5, 5, 5], 1: [5, 5, 5, 5], 2: [5, 5, 5], 3: [5, 5, 5], 4: [5, None, 5]},
    "fluency": {0: [4, 5, 4], 1: [4, 4, 4, 5], 2: [3, 4, 4], 3: [5, 5, 5], 4: [2, None, 3], 5: [4, 4, 3]},
}
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def report(db):
    batch = make_batch("pinned", n_items=6, k=3, systems=("base", "tuned"))
    items = list(Item.objects.filter(batch=batch).order_by("position"))
    users = [make_user(f"pinned-a{j}") for j in range(4)]
    minute = 0
    for i, item in enumerate(items):
        for j, user in enumerate(users):
            scores = {
                d: (TABLE[d].get(i) or [None] * 4)[j] if j < len(TABLE[d].get(i, [])) else None for d in DIMS
            }
            if all(v is None for v in scores.values()):
                continue
            minute += 1
            make_annotation(item, user, scores, submitted_at=START + timedelta(minutes=minute))
    return batch, batch_report(batch=batch, n_resamples=200, seed=7)


def _pinned(name: str, text: str) -> str:
    path = PINNED / name
    if os.environ.get("PIN_UPDATE"):
        assert not ADDED, "pin only the statistics that were there before the table"
        path.write_bytes(text.encode("utf-8"))
    return path.read_bytes().decode("utf-8")  # bytes: the CSV's CRLF line ends are part of it


PINNED_KEYS = set(json.loads((PINNED / "dimensions.json").read_bytes())["dimensions"]["coherence"])
ADDED = [s for s in AGREEMENT_STATISTICS if s.key not in PINNED_KEYS]


def _added_keys() -> set[str]:
    keys = set()
    for s in ADDED:
        keys |= {s.key, f"{s.key}_ci95", f"{s.key}_ci95_low", f"{s.key}_ci95_high"} if s.ci else {s.key}
        keys |= {c.key for c in s.columns}
    return keys


def _agreement_table_html(html: str) -> str:
    """The agreement section of the report HTML, whitespace between tags and runs of spaces collapsed
    (a template loop lays the same markup out differently)."""
    start = html.index("<h2>Agreement per dimension</h2>")
    end = html.index("</section>", start)
    section = re.sub(r">\s+<", "><", html[start:end])
    return re.sub(r"\s+", " ", section).strip() + "\n"


def _without_added_columns(section: str) -> str:
    """The HTML table without the columns whose header is an added statistic's (or its interval's)."""
    added = {s.page for s in ADDED} | {c.page for s in ADDED for c in s.columns if c.page}
    header_row = re.search(r"<thead><tr>(.*?)</tr></thead>", section).group(1)
    headers = re.findall(r"<th[^>]*>(.*?)</th>", header_row)
    assert added <= set(headers), "every added statistic has its column"
    keep = [i for i, h in enumerate(headers) if h not in added]

    def row(match: re.Match) -> str:
        cells = re.findall(r"<t[hd][^>]*>.*?</t[hd]>", match.group(1))
        assert len(cells) == len(headers)
        return "<tr>" + "".join(cells[i] for i in keep) + "</tr>"

    return re.sub(r"<tr>(.*?)</tr>", row, section)


def _card_section(card: str) -> str:
    start = card.index("## Methods")
    end = card.index("## ", card.index("## Agreement") + 3)
    return card[start:end]


def _card_without_added(section: str) -> str:
    added = {f"{s.card} [95% CI]" if s.ci else s.card for s in ADDED if s.card}
    assert added <= set(card_headers())
    lines = section.split("\n")
    table = [i for i, line in enumerate(lines) if line.startswith("| Dimension |")][0]
    keep = [i for i, h in enumerate(lines[table].strip("|").split(" | ")) if h.strip() not in added]
    for i in range(table, len(lines)):
        if not lines[i].startswith("|"):
            break
        if i == table + 1:
            lines[i] = "|" + "---|" * len(keep)
            continue
        cells = lines[i][2:-2].split(" | ")
        lines[i] = "| " + " | ".join(cells[j] for j in keep) + " |"
    return "\n".join(lines)


def _methods_without_added(text: str) -> str:
    for s in ADDED:
        if s.methods:
            assert f"; {s.methods}" in text
            text = text.replace(f"; {s.methods}", "")
        if s.symbol:
            figure = re.compile(
                rf", {re.escape(s.symbol)} = (undefined|-?[0-9.]+( \[-?[0-9.]+, -?[0-9.]+\])?)"
            )
            assert figure.search(text)
            text = figure.sub("", text)
    return text


def test_json_dimensions_are_pinned(report):
    _, report = report
    data = report_to_dict(report)
    added = _added_keys()
    for name in ("dimensions", "dimensions_all_annotators"):
        for entry in data[name].values():
            assert added <= set(entry) | {f"{k}_ci95_low" for k in entry} | {f"{k}_ci95_high" for k in entry}
            for key in added & set(entry):
                del entry[key]
    text = json.dumps(
        {"dimensions": data["dimensions"], "all": data["dimensions_all_annotators"]},
        indent=1,
        ensure_ascii=False,
    )
    assert text + "\n" == _pinned("dimensions.json", text + "\n")


def test_dimension_csv_is_pinned(report):
    _, report = report
    lines = "".join(dimensions_csv(report)).split("\r\n")
    header = lines[0].split(",")
    added = _added_keys()
    assert {k for k in added if not k.endswith("_ci95")} <= set(header)
    keep = [i for i, column in enumerate(header) if column not in added]
    text = "\r\n".join(",".join(line.split(",")[i] for i in keep) if line else line for line in lines)
    assert text == _pinned("dimensions.csv", text)


def test_html_agreement_table_is_pinned(report):
    _, report = report
    text = _without_added_columns(_agreement_table_html(report_html(report)))
    assert text == _pinned("agreement_table.html", text)


def test_methods_paragraph_is_pinned(report):
    _, report = report
    text = _methods_without_added(methods_paragraph(report)) + "\n"
    assert text == _pinned("methods.txt", text)


def test_card_agreement_section_is_pinned(report):
    batch, report = report
    card = dataset_card(
        batch=batch,
        report=report,
        rows={"ratings": 20, "items": 6},
        raters={},
        exclusions={},
        rater_names=True,
    )
    text = _card_without_added(_methods_without_added(_card_section(card)))  # the card quotes the methods
    assert text == _pinned("card_agreement.md", text)
