"""The table of agreement statistics (annotator.reports.statistics): every row names a real hcs
coefficient and function, the outputs it drives agree with it, the API's schema is generated from it
and the stored reports' schema version follows it."""

from __future__ import annotations

import dataclasses
import json

import pytest
from django.utils.module_loading import import_string

from annotator.api.schemas import DimensionAgreementOut
from annotator.reports import statistics
from annotator.reports.exports.csv_tables import DIMENSION_COLUMNS
from annotator.reports.selectors.stored import report_schema_version
from annotator.reports.statistics import (
    AGREEMENT_STATISTICS,
    DIMENSION_COUNTS,
    card_headers,
    csv_columns,
    json_types,
    json_values,
    page_cells,
    page_columns,
)
from hcs.agreement import COEFFICIENTS, dimension_agreement

FIVE = [1, 2, 3, 4, 5]
COUNTS = [[3, 0, 0, 0, 0], [0, 2, 1, 0, 0], [0, 0, 1, 1, 1], [0, 0, 0, 2, 1], [1, 0, 0, 0, 2]]


@pytest.fixture(scope="module")
def agreement():
    return dimension_agreement(COUNTS, COUNTS, FIVE, k=3, n_resamples=100, seed=1)


def test_every_row_names_an_hcs_coefficient_and_function():
    names = {c.name for c in COEFFICIENTS}
    for s in AGREEMENT_STATISTICS:
        assert s.coefficient in names, s.key
        assert callable(import_string(s.function)), s.function
        assert s.reference and s.page and s.decimals >= 0, s.key
    assert {
        s.coefficient for s in AGREEMENT_STATISTICS
    } == names  # every coefficient hcs computes is reported


def test_keys_and_columns_are_unique():
    keys = [key for key, _ in json_types()]
    assert len(keys) == len(set(keys))
    assert len(DIMENSION_COLUMNS) == len(set(DIMENSION_COLUMNS))
    assert DIMENSION_COLUMNS[:2] == ["dimension", "label"] and DIMENSION_COLUMNS[2:] == csv_columns()


def test_json_values_follow_json_types(agreement):
    values = json_values(agreement)
    assert list(values) == [key for key, _ in json_types()]
    s = AGREEMENT_STATISTICS[0]
    assert values[s.key] == getattr(agreement, s.coefficient)
    assert values[f"{s.key}_ci95"] == list(getattr(agreement, f"{s.coefficient}_ci95"))


def test_the_api_schema_is_the_table(agreement):
    entry = {"label": "Coherence", **json_values(agreement), "distribution": {"1": 4, "2": 2}}
    assert list(DimensionAgreementOut.model_fields) == list(entry)
    assert DimensionAgreementOut.model_validate(entry).model_dump() == entry
    with pytest.raises(ValueError):
        DimensionAgreementOut.model_validate(
            {k: v for k, v in entry.items() if k != AGREEMENT_STATISTICS[-1].key}
        )


def test_page_and_card_columns_match_their_cells(agreement):
    assert len(page_columns()) == len(page_cells(agreement))
    shown = [s for s in AGREEMENT_STATISTICS if s.card] + [c for c in DIMENSION_COUNTS if c.card]
    assert len(card_headers()) == len(shown)


def test_changing_a_statistic_changes_the_stored_reports_schema_version(monkeypatch):
    current = report_schema_version()
    changed = dataclasses.replace(AGREEMENT_STATISTICS[-1], decimals=AGREEMENT_STATISTICS[-1].decimals + 1)
    monkeypatch.setattr(statistics, "AGREEMENT_STATISTICS", (*AGREEMENT_STATISTICS[:-1], changed))
    assert report_schema_version.__wrapped__() != current
    monkeypatch.undo()
    assert report_schema_version.__wrapped__() == current


def test_the_report_api_documents_the_dimensions(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    ok = schema["paths"]["/api/v1/batches/{batch_id}/report"]["get"]["responses"]["200"]
    dimension = ok["content"]["application/json"]["schema"]["properties"]["dimensions"][
        "additionalProperties"
    ]
    assert list(dimension["properties"]) == ["label", *(key for key, _ in json_types()), "distribution"]
    json.dumps(schema)
