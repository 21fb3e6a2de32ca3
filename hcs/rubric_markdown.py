"""Render a rubric as the Markdown page annotators read (``HCS_rubric.md``).

``python -m hcs.rubric_markdown [RUBRIC.json] > HCS_rubric.md`` regenerates it; a test
checks the committed file matches the JSON so the two never drift.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from hcs.rubric import DEFAULT_RUBRIC_PATH, Rubric


def _percent(weight: float) -> str:
    return f"{weight:.2f}"


def _scale_sentence(rubric: Rubric) -> str:
    return f"Rate every dimension with a whole number from {rubric.scale_min} (worst) to {rubric.scale_max} (best)."


def _example_lines(rubric: Rubric, example) -> list[str]:
    """One worked example; parts a rubric file got wrong (unknown keys, non-numeric scores) are
    left out rather than failing the page that shows it."""
    if not isinstance(example, Mapping) or "prompt" not in example or "response" not in example:
        return []
    raw_scores = example.get("scores")
    raw_scores = raw_scores if isinstance(raw_scores, Mapping) else {}
    scores = {  # in the rubric's order, whatever order the stored JSON keeps (a batch's is sorted)
        k: raw_scores[k]
        for k in rubric.dimension_keys
        if k in raw_scores and isinstance(raw_scores[k], int | float) and not isinstance(raw_scores[k], bool)
    }
    score_text = ", ".join(f"{rubric.dimension(k).abbreviation or k}={v}" for k, v in scores.items())
    overall = rubric.overall(scores) if len(scores) == len(rubric.dimensions) else None
    raw_flags = example.get("flags")
    flag_keys = [k for k in (raw_flags if isinstance(raw_flags, list) else []) if k in rubric.flag_keys]
    flags = ", ".join(rubric.flag(k).label for k in flag_keys)
    suffix = f"; flags: {flags}" if flags else ""
    overall_text = f" \u2192 overall {overall:.2f}" if overall is not None else ""
    return [
        f"- Prompt: *\u201c{example['prompt']}\u201d*",
        f"  - Response: {example['response']}",
        f"  - Scores: {score_text}{suffix}{overall_text}. {example.get('note', '')}".rstrip(),
    ]


def _guidance_and_examples(rubric: Rubric) -> list[str]:
    lines: list[str] = []
    if rubric.guidance:
        lines += ["", "## General instructions", ""]
        lines += [f"- {g}" for g in rubric.guidance]
    examples = [_example_lines(rubric, e) for e in rubric.examples]
    if any(examples):
        lines += ["", "## Examples", ""]
        lines += [line for example in examples for line in example]
    return lines


def render_instructions(rubric: Rubric) -> str:
    """What an annotator reads before the first item when the batch has no instructions of its
    own: the rubric's purpose, general instructions and worked examples."""
    lines = [f"# How to rate: {rubric.title}", ""]
    if rubric.purpose:
        lines += [rubric.purpose, ""]
    lines.append(
        _scale_sentence(rubric) + " The rubric with every level is one key away on each item (press r)."
    )
    return "\n".join(lines + _guidance_and_examples(rubric)) + "\n"


def _source(rubric: Rubric) -> str:
    return "hcs/rubrics/hcs.json" if rubric.name == "hcs" else f"{rubric.name}.json"


def render_markdown(rubric: Rubric) -> str:
    lines: list[str] = [f"# {rubric.title} \u2014 rubric", ""]
    lines.append(
        f"<!-- Generated from {_source(rubric)} by `python -m hcs.rubric_markdown`. "
        "Edit the JSON, not this file. -->"
    )
    lines.append("")
    if rubric.purpose:
        lines += [rubric.purpose, ""]
    lines += [
        _scale_sentence(rubric),
        "",
        "## Overall score",
        "",
        "Overall = "
        + " + ".join(f"{_percent(d.weight)}\u00b7{d.abbreviation or d.label}" for d in rubric.dimensions),
        "",
        "| Dimension | Weight | What it measures |",
        "|---|---|---|",
    ]
    for d in rubric.dimensions:
        lines.append(f"| {d.label} ({d.abbreviation}) | {_percent(d.weight)} | {d.description} |")
    lines.append("")
    lines.append("## Levels")
    for d in rubric.dimensions:
        lines += ["", f"### {d.label}", "", d.description, "", "| Score | Description |", "|---|---|"]
        for offset, text in reversed(list(enumerate(d.levels))):
            lines.append(f"| {rubric.scale_min + offset} | {text} |")
    lines += ["", "## Flags and caps", "", "| Flag | When to set it | Effect on scores |", "|---|---|---|"]
    for f in rubric.flags:
        effects = [r.explanation for r in rubric.rules if r.flag == f.key]
        lines.append(f"| {f.label} (`{f.key}`) | {f.description} | {' '.join(effects) or 'No cap.'} |")
    for group in rubric.exclusive_flags:
        labels = " and ".join(rubric.flag(k).label for k in group)
        lines += ["", f"{labels} exclude each other: set at most one."]
    lines += _guidance_and_examples(rubric)
    lines += ["", "## Procedure", ""]
    lines.append(
        "Each item receives k \u2265 3 independent annotations from distinct annotators; agreement is "
        "reported per dimension with Fleiss\u2019 \u03ba, Krippendorff\u2019s \u03b1 and Gwet\u2019s AC2. "
        "Offline annotations use `templates/annotation_template.csv`."
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else DEFAULT_RUBRIC_PATH
    sys.stdout.write(render_markdown(Rubric.load(path)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
