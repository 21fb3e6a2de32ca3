"""The dataset card (README.md): YAML front matter the Hub and ``datasets`` read, then the methods
paragraph, the agreement table with the report's values, the sections features add
(``HF_CARD_SECTIONS``: the judge calibration summary) and the data statement (recruitment, payment,
quality control, exclusions counted).

Every figure is taken from the report object the JSON export is built from, formatted to
``DECIMALS`` places, so the card and the JSON agree to the printed precision.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import chain
from typing import TYPE_CHECKING, Any

from django.db.models import Count

from annotator.counted import counted
from annotator.models import AccountScope, Batch, Enrolment, GoldItem, InviteLink, StudyLink
from annotator.quality.selectors.standing import quality_rule_of
from annotator.reports.exports.methods import methods_paragraph
from annotator.reports.hf.parts import HF_CARD_SECTIONS, HF_PARTS
from annotator.reports.statistics import card_cells, card_headers
from hcs.datasets import config_path

if TYPE_CHECKING:
    from annotator.reports.selectors.batch_report import BatchReport

DECIMALS = 3
UNDEFINED = "–"
CONFIG_TEXT = {  # the core's configs; a feature's own say what their rows hold in HF_PARTS
    "ratings": "one row per annotation: every rater's own scores (perspectivist data), flags, constraint "
    "answers, time on item, source, and whether the rater was excluded",
    "items": "one row per item: its text, the number of annotations, per dimension the mean, the soft label "
    "(`<dim>_dist`, the share of ratings on each scale point) and its entropy in bits, the overall "
    "HCS mean, the adjudicated label where one exists, and whether it is a gold item",
}
SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
)


def size_category(n: int) -> str:
    """The Hub's size category of a dataset of ``n`` rows."""
    return next((label for limit, label in SIZE_CATEGORIES if n < limit), "n>100M")


def number(value: float | None) -> str:
    return UNDEFINED if value is None else f"{value:.{DECIMALS}f}"


def with_ci(value: float | None, ci) -> str:
    if value is None:
        return UNDEFINED
    if not ci or ci[0] is None or ci[1] is None:
        return number(value)
    return f"{number(value)} [{number(ci[0])}, {number(ci[1])}]"


def cell(text: Any) -> str:
    """Text as one Markdown table cell: pipes escaped, line breaks flattened, HTML brackets defused."""
    return (
        str(text)
        .replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("\r", " ")
        .replace("\n", " ")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )


def _front_matter(batch: Batch, rows: dict[str, int]) -> str:
    lines = [
        "---",
        f"pretty_name: {json.dumps(batch.name, ensure_ascii=False)}",
        "license: unknown  # replace with the licence you publish under, e.g. cc-by-4.0",
        "size_categories:",
        f"- {size_category(rows.get('ratings', 0))}",
        "task_categories:",
        "- text-classification",
        "tags:",
        "- human-evaluation",
        "- llm-evaluation",
        "- annotator-disagreement",
        "- perspectivist",
        "configs:",
    ]
    for config in rows:
        lines += [
            f"- config_name: {config}",
            "  data_files:",
            "  - split: train",
            f"    path: {config_path(config)}",
        ]
        if config == "ratings":
            lines.append("  default: true")
    return "\n".join(lines + ["---", ""])


def _agreement_table(report: BatchReport) -> list[str]:
    headers = ["Dimension", *card_headers()]
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in report.dimensions:
        cells = [f"{cell(row.label)} (`{row.key}`)", *card_cells(row.agreement, with_ci)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _config_text(config: str) -> str:
    return CONFIG_TEXT[config] if config in CONFIG_TEXT else HF_PARTS[config].content


def _recruitment(batch: Batch, raters: dict[int, str]) -> list[str]:
    out = []
    links = list(
        StudyLink.objects.filter(batch=batch)
        .order_by("created_at")
        .values_list("platform", "quota", "max_minutes")
    )
    crowd = dict(
        Enrolment.objects.filter(batch=batch)
        .exclude(worker_id="")
        .values("platform")
        .annotate(n=Count("pk"))
        .values_list("platform", "n")
    )
    for platform, quota, minutes in links:
        limit = f", sessions of at most {minutes} minutes" if minutes else ""
        out.append(
            f"- Crowd workers came through a {cell(platform)} study link "
            f"(at most {counted(quota, 'item', 'items')} per worker{limit})."
        )
    for platform, n in sorted(crowd.items()):
        out.append(
            f"- {n} worker{'s' if n != 1 else ''} enrolled from {cell(platform or 'a crowd platform')}; their "
            "platform ids stay in the app and are not in this dataset."
        )
    origins = Counter(
        dict(
            AccountScope.objects.filter(user_id__in=list(raters))
            .values("origin")
            .annotate(n=Count("pk"))
            .values_list("origin", "n")
        )
    )
    labels = dict(AccountScope.Origin.choices)
    for origin, n in sorted(origins.items()):
        out.append(f"- {n} rater{'s' if n != 1 else ''} joined by {labels.get(origin, origin).lower()}.")
    staff = len(raters) - sum(origins.values())
    if staff > 0:
        out.append(
            f"- {staff} rater{'s' if staff != 1 else ''} had accounts made by the study's administrators."
        )
    if InviteLink.objects.filter(batches=batch).exists() and not origins.get(AccountScope.Origin.INVITE):
        out.append("- Invite links were made for this batch; nobody who came by one has rated.")
    if not out:
        out.append("- No rater has been recruited yet.")
    return out


def _quality_control(batch: Batch) -> list[str]:
    rule = quality_rule_of(batch=batch)
    checks = GoldItem.objects.filter(batch=batch, kind=GoldItem.Kind.CHECK).count()
    training = GoldItem.objects.filter(batch=batch, kind=GoldItem.Kind.TRAINING).count()
    out = [
        f"- Each item was to receive k = {batch.k} independent ratings; annotators did not see each other's."
    ]
    if rule.training_items and training:
        out.append(
            f"- Training: {rule.training_items} gold items before rating, passed with a mean absolute error "
            f"of at most {rule.training_max_mae:g} and every cap right."
        )
    if checks:
        out.append(
            f"- Hidden gold checks: one item in {rule.check_every} ({checks} check items); a warning below "
            f"{rule.check_warn_below:.0%} correct and a block below {rule.check_block_below:.0%} after "
            f"{rule.check_min_answered} answered."
        )
    else:
        out.append("- No hidden gold checks were used.")
    out.append(
        f"- Ratings faster than {rule.min_seconds:g} s per item are flagged on the report (kept in the data)."
    )
    return out


def _exclusions(
    exclusions: dict[int, tuple[str, str]], raters: dict[int, str], names: dict[str, str]
) -> list[str]:
    if not exclusions:
        return ["No rater was excluded. Every rating in `ratings` has `excluded = false`."]
    by_rule = Counter(rule or "unspecified" for rule, _ in exclusions.values())
    out = [
        f"{len(exclusions)} rater{'s were' if len(exclusions) != 1 else ' was'} excluded "
        f"({', '.join(f'{n} by {cell(rule)}' for rule, n in sorted(by_rule.items()))}). Their ratings are kept "
        "in `ratings` with `excluded = true` and left out of every statistic on this card and of the `items` "
        "config's means and soft labels.",
        "",
        "| Rater | Rule | Reason |",
        "|---|---|---|",
    ]
    for pk, (rule, reason) in sorted(exclusions.items(), key=lambda e: raters[e[0]]):
        for username, pseudonym in names.items():  # a reason typed by a researcher may name people
            reason = reason.replace(username, pseudonym) if username else reason
        out.append(f"| {cell(raters[pk])} | {cell(rule)} | {cell(reason) or UNDEFINED} |")
    return out


def dataset_card(
    *,
    batch: Batch,
    report: BatchReport,
    rows: dict[str, int],
    raters: dict[int, str],
    exclusions: dict[int, tuple[str, str]],
    rater_names: bool,
) -> str:
    """The whole README.md. ``raters``: {user pk: the id the dataset gives them}."""
    parts = [
        _front_matter(batch, rows),
        *_introduction(batch, report, rows),
        "## Methods",
        "",
        methods_paragraph(report),
        "",
        "## Agreement",
        "",
        f"Values to {DECIMALS} decimals; the JSON report of the app carries them in full precision. "
        f"95% percentile bootstrap intervals over items ({report.n_resamples} resamples, seed {report.seed}); "
        f"{UNDEFINED} where a value is undefined.",
        "",
        *_agreement_table(report),
        "",
        *chain.from_iterable(
            (f"## {section.heading}", "", *section.lines_of(report), "") for section in HF_CARD_SECTIONS
        ),
        *_data_statement(batch, raters, exclusions, rater_names),
    ]
    return "\n".join(parts)


def _introduction(batch: Batch, report: BatchReport, rows: dict[str, int]) -> list[str]:
    """The title, what the dataset holds, its configs and how to load them."""
    rubric = report.rubric
    return [
        f"# {cell(batch.name)}",
        "",
        f"Human ratings of LLM outputs on the {cell(rubric.title)} rubric (version {cell(rubric.version)}, "
        f"{len(rubric.dimensions)} dimensions scored {rubric.scale_min}–{rubric.scale_max}), with every rater's "
        "own label kept. Exported from the human-evaluation app with `export_report --format hf`.",
        "",
        "## Configs",
        "",
        "| Config | Rows | Content |",
        "|---|---|---|",
        *(f"| `{name}` | {n} | {_config_text(name)} |" for name, n in rows.items()),
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        'ratings = load_dataset("PATH_OR_REPO", "ratings", split="train")',
        "```",
        "",
        "`hcs.datasets.load(folder)` reads the folder back into the arrays `hcs.agreement` takes and "
        "recomputes the table below exactly.",
        "",
    ]


def _data_statement(
    batch: Batch, raters: dict[int, str], exclusions: dict[int, tuple[str, str]], rater_names: bool
) -> list[str]:
    """Raters and recruitment, payment, quality control and exclusions."""
    from annotator.reports.hf.rows import usernames

    names = (
        {} if rater_names else {u: raters[pk] for pk, u in usernames(pks=list(raters)).items() if len(u) > 2}
    )
    privacy = (
        "Raters are named by their usernames in this app (`--rater-names`)."
        if rater_names
        else "`rater` is a pseudonym: stable within this batch, different in other batches, and not derivable "
        "from a username or crowd-platform id without the server's secret key."
    )
    return [
        "## Data statement",
        "",
        "### Raters and recruitment",
        "",
        *_recruitment(batch, raters),
        "",
        privacy,
        "",
        "### Payment",
        "",
        "The app does not record pay rates. State here how raters were paid (rate per hour or per item, "
        "bonuses), as the data statement guidelines ask (Bender & Friedman, 2018).",
        "",
        "### Quality control",
        "",
        *_quality_control(batch),
        "",
        "### Exclusions",
        "",
        *_exclusions(exclusions, raters, names),
        "",
    ]
