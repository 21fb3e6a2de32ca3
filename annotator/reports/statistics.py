"""The one table of the agreement statistics a report gives per dimension.

Each row of :data:`AGREEMENT_STATISTICS` names a coefficient of ``hcs``'s per-dimension result
(:class:`hcs.agreement.DimensionAgreement`) and says how every output shows it: its JSON keys and CSV
columns (``<key>``, and with an interval ``<key>_ci95`` or ``<key>_ci95_low``/``_high``), its column on
the report page and the dataset card, its clause and figure in the methods paragraph, and the
reference it rests on. :data:`DIMENSION_COUNTS` are the counts that follow the statistics.

The JSON export, the dimension CSV, the report's agreement table, the dataset card, the methods
paragraph, the API's schema and the stored reports' schema version are all read from here, so a new
statistic is one row (and its function in ``hcs``).
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from django.template.defaultfilters import floatformat
from django.utils.safestring import SafeString, mark_safe

from hcs.numbers import finite_or_none

UNDEFINED_CELL = "—"  # the report page's mark for an undefined value


@dataclass(frozen=True)
class Column:
    """A per-dimension value that is not a coefficient: a count, or what comes with a coefficient."""

    key: str  # JSON key and CSV column
    attribute: str  # of hcs.agreement.DimensionAgreement
    page: str | None = None  # header on the report page; None: not shown there
    page_class: str = "num"  # the cells' CSS class ("" for text)
    page_last: bool = False  # on the page after every statistic (Fleiss' κ's items used and left out)
    card: str | None = None  # header on the dataset card; None: not shown there
    json_type: Any = int
    empty_is_null: bool = False  # "" is null in the JSON (a label for an undefined value)


@dataclass(frozen=True)
class Statistic:
    """One agreement statistic per dimension, and how each output shows it."""

    key: str  # JSON key and CSV column, e.g. "gwet_ac2"
    coefficient: str  # its name in hcs (hcs.agreement.COEFFICIENTS; DimensionAgreement.<coefficient>)
    # The hcs function computing it, by dotted path: a worker importing this table (the API's schema
    # does) does not load numpy.
    function: str
    page: str  # header on the report page
    decimals: int  # places on the report page
    ci: bool = True  # a 95 % bootstrap interval: JSON <key>_ci95, CSV <key>_ci95_low/_high
    ci_column: bool = False  # on the page the interval has its own column (else after the value)
    card: str | None = None  # header on the dataset card (" [95% CI]" added with an interval)
    symbol: str | None = None  # in the methods paragraph's figures per dimension; None: not there
    methods: str = ""  # its clause in the methods paragraph ({fewer}: the items Fleiss' κ left out)
    reference: str = ""
    columns: tuple[Column, ...] = ()  # what comes with it (Fleiss' κ: its label, items used, left out)


AGREEMENT_STATISTICS: tuple[Statistic, ...] = (
    Statistic(
        key="fleiss_kappa",
        coefficient="fleiss_kappa",
        function="hcs.agreement.coefficients.fleiss_kappa",
        page="Fleiss' κ",
        decimals=3,
        ci_column=True,
        card="Fleiss' κ",
        symbol="κ",
        methods="Fleiss' κ was computed on the items with at least k ratings, using the first k by "
        "submission time ({fewer})",
        reference="Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. "
        "Psychological Bulletin 76(5), 378–382.",
        columns=(
            Column(
                "fleiss_kappa_label",
                "fleiss_label",
                page="Landis & Koch",
                page_class="",
                json_type=str | None,
                empty_is_null=True,
            ),
            Column("fleiss_items_used", "fleiss_items_used", page="κ items used", page_last=True),
            Column("fleiss_items_left_out", "fleiss_items_left_out", page="left out", page_last=True),
        ),
    ),
    Statistic(
        key="krippendorff_alpha_ordinal",
        coefficient="alpha_ordinal",
        function="hcs.agreement.coefficients.krippendorff_alpha",
        page="α ordinal",
        decimals=3,
        card="Krippendorff's α ordinal",
        symbol="α",
        methods="Krippendorff's α (ordinal) used every rating",
        reference="Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg "
        "School for Communication, University of Pennsylvania.",
    ),
    Statistic(
        key="krippendorff_alpha_interval",
        coefficient="alpha_interval",
        function="hcs.agreement.coefficients.krippendorff_alpha",
        page="α interval",
        decimals=3,
        card="α interval",
        reference="Krippendorff (2011), as for the ordinal α.",
    ),
    Statistic(
        key="gwet_ac2",
        coefficient="gwet_ac2",
        function="hcs.agreement.coefficients.gwet_ac2",
        page="Gwet's AC2",
        decimals=3,
        card="Gwet's AC2",
        reference="Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed. Advanced Analytics.",
    ),
    Statistic(
        key="brennan_prediger_kappa",
        coefficient="brennan_prediger",
        function="hcs.agreement.coefficients.brennan_prediger",
        page="Brennan–Prediger κ",
        decimals=3,
        card="Brennan–Prediger κ",
        symbol="κ_BP",
        methods="Brennan and Prediger's κ_BP (nominal, chance agreement 1/q on the q-point scale) used "
        "every rating",
        reference="Brennan, R. L. and Prediger, D. J. (1981). Coefficient kappa: some uses, misuses, and "
        "alternatives. Educational and Psychological Measurement 41(3), 687–699.",
    ),
    Statistic(
        key="percent_agreement",
        coefficient="percent_agreement",
        function="hcs.agreement.coefficients.percent_agreement",
        page="% agreement",
        decimals=1,
        ci=False,
        reference="Fleiss (1971): P̄, the observed agreement, as a percentage.",
    ),
    Statistic(
        key="percent_agreement_within_1",
        coefficient="percent_within_one",
        function="hcs.agreement.coefficients.percent_agreement",
        page="% within ±1",
        decimals=1,
        ci=False,
        reference="Fleiss (1971): P̄ with scores at most one level apart counted as agreeing.",
    ),
)

DIMENSION_COUNTS: tuple[Column, ...] = (
    Column("n_items", "n_items", card="Items"),
    Column("n_items_pairable", "n_items_pairable"),
    Column("n_ratings", "n_ratings", card="Ratings"),
)


# ------------------------------------------------------------------ JSON and CSV
def json_values(agreement: Any) -> dict[str, Any]:
    """The statistics and counts of one dimension as the JSON export's keys, in order (full precision)."""
    out: dict[str, Any] = {}
    for s in AGREEMENT_STATISTICS:
        out[s.key] = finite_or_none(getattr(agreement, s.coefficient))
        if s.ci:
            ci = getattr(agreement, f"{s.coefficient}_ci95")
            out[f"{s.key}_ci95"] = None if ci is None else [finite_or_none(ci[0]), finite_or_none(ci[1])]
        out.update(_column_json(c, agreement) for c in s.columns)
    out.update(_column_json(c, agreement) for c in DIMENSION_COUNTS)
    return out


def _column_json(column: Column, agreement: Any) -> tuple[str, Any]:
    value = getattr(agreement, column.attribute)
    return column.key, (value or None) if column.empty_is_null else value


def json_types() -> list[tuple[str, Any]]:
    """(key, Python type) of :func:`json_values`, in order: what the API's schema declares."""
    out: list[tuple[str, Any]] = []
    for s in AGREEMENT_STATISTICS:
        out.append((s.key, float | None))
        if s.ci:
            out.append((f"{s.key}_ci95", list[float | None] | None))
        out += [(c.key, c.json_type) for c in s.columns]
    return out + [(c.key, c.json_type) for c in DIMENSION_COUNTS]


def csv_columns() -> list[str]:
    """The dimension CSV's columns after ``dimension`` and ``label``."""
    out = []
    for s in AGREEMENT_STATISTICS:
        out.append(s.key)
        if s.ci:
            out += [f"{s.key}_ci95_low", f"{s.key}_ci95_high"]
        out += [c.key for c in s.columns]
    return out + [c.key for c in DIMENSION_COUNTS]


def csv_cells(agreement: Any) -> list[Any]:
    """One dimension's cells under :func:`csv_columns` (undefined values empty)."""
    out = []
    for s in AGREEMENT_STATISTICS:
        out.append(getattr(agreement, s.coefficient))
        if s.ci:
            ci = getattr(agreement, f"{s.coefficient}_ci95")
            out += [None, None] if ci is None else list(ci)
        out += [getattr(agreement, c.attribute) for c in s.columns]
    return out + [getattr(agreement, c.attribute) for c in DIMENSION_COUNTS]


# ------------------------------------------------------------------ the report page
@dataclass(frozen=True)
class PageColumn:
    header: SafeString
    css: str


@dataclass(frozen=True)
class PageCell:
    text: str
    css: str
    ci: str = ""  # an interval shown after the value


def _header(text: str) -> SafeString:
    return mark_safe(html.escape(text, quote=False))  # noqa: S308 (our own constant labels, escaped)


def _number(value: float | None, decimals: int) -> str:
    return floatformat(value, decimals) or UNDEFINED_CELL


def _interval(ci, decimals: int) -> str:
    return f"[{floatformat(ci[0], decimals)}, {floatformat(ci[1], decimals)}]" if ci else ""


def page_columns() -> list[PageColumn]:
    """The headers of the report's agreement table after "Dimension"."""
    out, last = [], []
    for s in AGREEMENT_STATISTICS:
        out.append(PageColumn(_header(s.page), "num"))
        if s.ci and s.ci_column:
            out.append(PageColumn(_header("95 % CI"), ""))
        for c in (c for c in s.columns if c.page):
            (last if c.page_last else out).append(PageColumn(_header(c.page), c.page_class))
    return out + last


def page_cells(agreement: Any) -> list[PageCell]:
    """One dimension's cells under :func:`page_columns`, formatted as the page shows them."""
    out, last = [], []
    for s in AGREEMENT_STATISTICS:
        value = _number(getattr(agreement, s.coefficient), s.decimals)
        ci = _interval(getattr(agreement, f"{s.coefficient}_ci95"), s.decimals) if s.ci else ""
        if s.ci_column:
            out += [PageCell(value, "num"), PageCell(ci or UNDEFINED_CELL, "ci")]
        else:
            out.append(PageCell(value, "num", ci))
        for c in (c for c in s.columns if c.page):
            text = getattr(agreement, c.attribute)
            cell = PageCell(str(text) if text not in ("", None) else UNDEFINED_CELL, c.page_class)
            (last if c.page_last else out).append(cell)
    return out + last


# ------------------------------------------------------------------ the dataset card
def card_headers() -> list[str]:
    """The dataset card's agreement table headers after "Dimension"."""
    out = [f"{s.card} [95% CI]" if s.ci else s.card for s in AGREEMENT_STATISTICS if s.card]
    return out + [c.card for c in DIMENSION_COUNTS if c.card]


def card_cells(agreement: Any, with_ci: Callable[[float | None, Any], str]) -> list[str]:
    """One dimension's cells under :func:`card_headers`; ``with_ci(value, ci)`` formats a statistic."""
    out = [
        with_ci(
            getattr(agreement, s.coefficient), getattr(agreement, f"{s.coefficient}_ci95") if s.ci else None
        )
        for s in AGREEMENT_STATISTICS
        if s.card
    ]
    return out + [str(getattr(agreement, c.attribute)) for c in DIMENSION_COUNTS if c.card]


# ------------------------------------------------------------------ the methods paragraph
def methods_clauses(fewer: str) -> str:
    """How the statistics were computed: their clauses, joined."""
    return "; ".join(s.methods.format(fewer=fewer) for s in AGREEMENT_STATISTICS if s.methods)


def methods_figures(agreement: Any, value: Callable[[float | None, Any], str]) -> str:
    """One dimension's figures for the methods paragraph, e.g. ``κ = 0.43 [0.21, 0.60], α = …``."""
    return ", ".join(
        f"{s.symbol} = {value(getattr(agreement, s.coefficient), getattr(agreement, f'{s.coefficient}_ci95'))}"
        for s in AGREEMENT_STATISTICS
        if s.symbol
    )


# ------------------------------------------------------------------ stored reports
def statistics_digest() -> str:
    """A digest of the table: a stored report made under another table is not served."""
    rows = [{f.name: _plain(getattr(s, f.name)) for f in fields(Statistic)} for s in AGREEMENT_STATISTICS]
    rows.append({"counts": _plain(DIMENSION_COUNTS)})
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Column):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(Column)}
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
