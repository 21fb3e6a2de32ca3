"""Render a rubric as the Markdown page annotators read (``HCS_rubric.md``).

``python -m hcs.rubric_markdown [RUBRIC.json] > HCS_rubric.md`` regenerates it; a test
checks the committed file matches the JSON so the two never drift.
"""

from __future__ import annotations

import sys

from hcs.rubric import DEFAULT_RUBRIC_PATH, Rubric


def _percent(weight: float) -> str:
    return f"{weight:.2f}"


def render_markdown(rubric: Rubric) -> str:
    lines: list[str] = [f"# {rubric.title} \u2014 rubric", ""]
    lines.append(
        f"<!-- Generated from fixtures/rubrics/{rubric.name}.json by `python -m hcs.rubric_markdown`. "
        "Edit the JSON, not this file. -->"
    )
    lines.append("")
    if rubric.purpose:
        lines += [rubric.purpose, ""]
    lines += [
        f"Rate every dimension with a whole number from {rubric.scale_min} (worst) "
        f"to {rubric.scale_max} (best).",
        "",
        "## Overall score",
        "",
        "Overall = " + " + ".join(f"{_percent(d.weight)}\u00b7{d.abbreviation or d.label}" for d in rubric.dimensions),
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
    if rubric.guidance:
        lines += ["", "## General instructions", ""]
        lines += [f"- {g}" for g in rubric.guidance]
    if rubric.examples:
        lines += ["", "## Examples", ""]
        for example in rubric.examples:
            scores = example.get("scores", {})
            score_text = ", ".join(
                f"{rubric.dimension(k).abbreviation or k}={v}" for k, v in scores.items()
            )
            overall = rubric.overall(scores)
            lines.append(f"- Prompt: *\u201c{example['prompt']}\u201d*")
            lines.append(f"  - Response: {example['response']}")
            flags = ", ".join(rubric.flag(k).label for k in example.get("flags", []))
            suffix = f"; flags: {flags}" if flags else ""
            overall_text = f" \u2192 overall {overall:.2f}" if overall is not None else ""
            lines.append(f"  - Scores: {score_text}{suffix}{overall_text}. {example.get('note', '')}".rstrip())
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
