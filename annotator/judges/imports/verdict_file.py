"""A file of pairwise judge verdicts (baseline vs enhanced, the G-Eval pairwise format): CSV or JSONL.

Each row names the pair either by ``prompt_id`` (the batch has one baseline-system and one other item for
that prompt) or by ``baseline_item_id`` and ``enhanced_item_id``; then ``winner`` (baseline, enhanced or
tie) and optionally ``confidence`` (0–1) and ``reason`` — or a ``raw_output`` with the judge's JSON, from
which ``overall.winner`` and ``overall.confidence`` are read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from annotator.imports.errors import RowError
from annotator.imports.reading import ROW, read_table
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
    table = read_table(data, filename=filename)
    errors = list(table.errors)
    columns = set(table.columns)
    by_prompt = "prompt_id" in columns
    by_items = {"baseline_item_id", "enhanced_item_id"} <= columns
    if not (by_prompt or by_items):
        errors.append(
            table.error(
                None,
                "prompt_id",
                "is missing: name each pair by prompt_id or by baseline_item_id and enhanced_item_id",
            )
        )
    if not columns & {"winner", "raw_output"}:
        errors.append(
            table.error(None, "winner", "is missing: give a `winner` column or a `raw_output` column")
        )
    if errors:
        return ParsedVerdicts(table.format, errors)
    known = set(item_ids)

    def get(record, name):
        return str(record.get(name, "") or "").strip() if name in columns else ""

    rows: list[VerdictRow] = []
    seen: dict[tuple[str, str], int] = {}
    for record in table.frame.to_dict("records"):
        number = int(record[ROW])
        problems: list[RowError] = []
        baseline, enhanced = get(record, "baseline_item_id"), get(record, "enhanced_item_id")
        if not (baseline or enhanced) and by_prompt:
            prompt_id = get(record, "prompt_id")
            pair = prompt_pairs.get(prompt_id, f"`{prompt_id}` is not a prompt of this batch")
            if not prompt_id:
                problems.append(table.error(number, "prompt_id", "is empty"))
            elif isinstance(pair, str):
                problems.append(table.error(number, "prompt_id", pair))
            else:
                baseline, enhanced = pair
        else:
            for name, value in (("baseline_item_id", baseline), ("enhanced_item_id", enhanced)):
                if not value:
                    problems.append(table.error(number, name, "is empty"))
                elif value not in known:
                    problems.append(table.error(number, name, f"`{value}` is not an item of this batch"))
            if baseline and baseline == enhanced:
                problems.append(table.error(number, "enhanced_item_id", "is the same item as the baseline"))
        if baseline and enhanced:
            if (baseline, enhanced) in seen:
                problems.append(
                    table.error(
                        number,
                        None,
                        f"this pair already appears on {table.unit} {seen[(baseline, enhanced)]}",
                    )
                )
            seen.setdefault((baseline, enhanced), number)
        raw_output = str(record.get("raw_output", "") or "") if "raw_output" in columns else ""
        winner_text, confidence_text, reason = (
            get(record, "winner"),
            get(record, "confidence"),
            get(record, "reason"),
        )
        winner = confidence = None
        try:
            if winner_text:
                winner = normalize_winner(winner_text)
                confidence = parse_confidence(confidence_text) if confidence_text else None
            elif raw_output.strip():
                verdict = parse_verdict(raw_output)
                winner, confidence = verdict.winner, verdict.confidence
            else:
                problems.append(
                    table.error(number, "winner", "is empty and there is no raw_output to read it from")
                )
        except JudgeOutputError as exc:
            column = ("confidence" if "confidence" in str(exc) else "winner") if winner_text else "raw_output"
            problems.append(table.error(number, column, str(exc)))
        if problems:
            errors.extend(problems)
            continue
        rows.append(VerdictRow(number, baseline, enhanced, winner, confidence, reason, raw_output))
    if not rows and not errors:
        errors.append(table.error(None, None, "The file has no verdicts."))
    return ParsedVerdicts(table.format, sorted(errors, key=lambda e: e.sort_key), rows)
