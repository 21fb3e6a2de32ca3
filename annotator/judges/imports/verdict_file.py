"""A file of pairwise judge verdicts (baseline vs enhanced, the G-Eval pairwise format): CSV or JSONL.

Each row names the pair either by ``prompt_id`` (the batch has one baseline-system and one other item for
that prompt) or by ``baseline_item_id`` and ``enhanced_item_id``; then ``winner`` (baseline, enhanced or
tie) and optionally ``confidence`` (0–1) and ``reason`` — or a ``raw_output`` with the judge's JSON, from
which ``overall.winner`` and ``overall.confidence`` are read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from annotator.uploads.files.errors import RowError
from annotator.uploads.files.reading import read_table
from annotator.uploads.files.row_loop import Need, RowLoop
from hcs.judge_output import (
    JudgeOutputError,
    normalize_winner,
    parse_confidence,
    parse_verdict,
)


@dataclass(frozen=True)
class VerdictRow:
    row: int
    baseline: str
    enhanced: str
    winner: str
    confidence: float | None
    reason: str
    raw_output: str


@dataclass
class ParsedVerdicts:
    format: str
    errors: list[RowError]
    rows: list[VerdictRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def parse_verdict_file(
    data: bytes,
    *,
    filename: str = "",
    item_ids: Collection[str],
    prompt_pairs: Mapping[str, tuple[str, str] | str],
) -> ParsedVerdicts:
    """``prompt_pairs`` maps a prompt id to its (baseline, enhanced) item ids, or to why it has none."""
    loop = RowLoop(read_table(data, filename=filename))
    loop.need(
        Need(
            (("prompt_id",), ("baseline_item_id", "enhanced_item_id")),
            "prompt_id",
            "is missing: name each pair by prompt_id or by baseline_item_id and enhanced_item_id",
        ),
        Need.any_of(("winner", "raw_output"), "is missing: give a `winner` column or a `raw_output` column"),
    )
    if loop.errors:
        return ParsedVerdicts(loop.table.format, loop.errors)
    cells = {name: [c.strip() for c in loop.text(name)] for name in _STRIPPED}
    raw_outputs = loop.text("raw_output")
    known = set(item_ids)
    seen: dict[tuple[str, str], int] = {}

    def check(i: int, number: int, problems: list[RowError]) -> VerdictRow:
        baseline, enhanced = _pair(loop, cells, i, number, known, prompt_pairs, problems)
        if baseline and enhanced:
            if (baseline, enhanced) in seen:
                problems.append(
                    loop.error(
                        number, None, f"this pair already appears on {loop.unit} {seen[(baseline, enhanced)]}"
                    )
                )
            seen.setdefault((baseline, enhanced), number)
        winner, confidence = _verdict(loop, cells, raw_outputs[i], i, number, problems)
        return VerdictRow(number, baseline, enhanced, winner, confidence, cells["reason"][i], raw_outputs[i])

    rows = loop.each(check)
    if not rows and not loop.errors:
        loop.add(None, None, "The file has no verdicts.")
    return ParsedVerdicts(loop.table.format, loop.sorted_by_row_then_column_name(), rows)


_STRIPPED = ("prompt_id", "baseline_item_id", "enhanced_item_id", "winner", "confidence", "reason")


def _pair(loop, cells, i, number, known, prompt_pairs, problems) -> tuple[str, str]:
    """The row's (baseline, enhanced) item ids, by prompt or by item ids; checks them."""
    baseline, enhanced = cells["baseline_item_id"][i], cells["enhanced_item_id"][i]
    if not (baseline or enhanced) and loop.has("prompt_id"):
        prompt_id = cells["prompt_id"][i]
        pair = prompt_pairs.get(prompt_id, f"`{prompt_id}` is not a prompt of this batch")
        if not prompt_id:
            problems.append(loop.error(number, "prompt_id", "is empty"))
        elif isinstance(pair, str):
            problems.append(loop.error(number, "prompt_id", pair))
        else:
            baseline, enhanced = pair
        return baseline, enhanced
    for name, value in (("baseline_item_id", baseline), ("enhanced_item_id", enhanced)):
        if not value:
            problems.append(loop.error(number, name, "is empty"))
        elif value not in known:
            problems.append(loop.error(number, name, f"`{value}` is not an item of this batch"))
    if baseline and baseline == enhanced:
        problems.append(loop.error(number, "enhanced_item_id", "is the same item as the baseline"))
    return baseline, enhanced


def _verdict(loop, cells, raw_output, i, number, problems) -> tuple[str | None, float | None]:
    """The row's winner and confidence, from its cells or else from its raw output."""
    winner_text, confidence_text = cells["winner"][i], cells["confidence"][i]
    try:
        if winner_text:
            return normalize_winner(winner_text), (
                parse_confidence(confidence_text) if confidence_text else None
            )
        if raw_output.strip():
            verdict = parse_verdict(raw_output)
            return verdict.winner, verdict.confidence
        problems.append(loop.error(number, "winner", "is empty and there is no raw_output to read it from"))
    except JudgeOutputError as exc:
        column = ("confidence" if "confidence" in str(exc) else "winner") if winner_text else "raw_output"
        problems.append(loop.error(number, column, str(exc)))
    return None, None
