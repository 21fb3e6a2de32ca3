"""Pairwise judge runs (the G-Eval template): one call per prompt, the baseline system's response against
the enhanced system's, paired by ``prompt_id``; the answer's winner, confidence, overall scores and each
of the judge's own criteria are read."""

from __future__ import annotations

from annotator.counted import counted
from annotator.judges.engine.calls import MAX_LISTED, Task, refusal
from annotator.judges.engine.templates import JudgeTemplate, TemplateError, pair_fields
from annotator.models import Batch, Item
from hcs.judge_output import (
    JudgeOutputError,
    answer_text,
    extract_json,
    normalize_key,
    parse_verdict,
    read_value,
)
from hcs.rubric import Rubric


def pair_tasks(
    batch: Batch,
    template: JudgeTemplate,
    baseline_system: str,
    enhanced_system: str,
    limit: int | None = None,
    swap: bool = False,
    only: list[int] | None = None,
) -> tuple[list[Task], list[str]]:
    """The calls of a pairwise run, and why each prompt without a pair has none.

    ``swap`` adds, after the pairs in their own order, every pair again with the enhanced system's response
    shown first (its call is saved with that item as ``item``): the position-swap probe. ``only``: pairs
    whose two items are both among these pks (the calibration set).

    Raises TemplateError when no prompt has a pair or a variable cannot be filled (before any call).
    """
    by_prompt: dict[str, dict[str, list[Item]]] = {}
    items = Item.objects.filter(batch=batch, system_id__in=[baseline_system, enhanced_system]).order_by(
        "position", "id"
    )
    if only is not None:
        items = items.filter(pk__in=only)
    for item in items:
        by_prompt.setdefault(item.prompt_id, {}).setdefault(item.system_id, []).append(item)
    rubric: Rubric = batch.rubric_obj
    tasks, unpaired, problems = [], [], []
    for prompt_id, systems in by_prompt.items():
        base, enhanced = systems.get(baseline_system, []), systems.get(enhanced_system, [])
        if not prompt_id or len(base) != 1 or len(enhanced) != 1:
            unpaired.append(
                f"prompt `{prompt_id or '(none)'}`: {counted(len(base), 'item', 'items')} of `{baseline_system}`, "
                f"{len(enhanced)} of `{enhanced_system}` (a pair needs one of each)"
            )
            continue
        try:
            orders = [(base[0], enhanced[0], False)] + ([(enhanced[0], base[0], True)] if swap else [])
            tasks.append(
                [Task(a, b, template.render(pair_fields(a, b, rubric)), swapped=s) for a, b, s in orders]
            )
        except TemplateError as exc:
            problems.append(
                f"prompt `{prompt_id}` (items `{base[0].item_id}`, `{enhanced[0].item_id}`): {exc}"
            )
    if problems:
        raise refusal(problems, ("pair", "pairs"), "cannot fill the template")
    if not tasks:
        shown = "\n  ".join(unpaired[:MAX_LISTED]) or "no items of either system"
        raise TemplateError(
            f"no prompt has one item of `{baseline_system}` and one of `{enhanced_system}`:\n  {shown}"
        )
    kept = tasks[: limit or None]
    return [pair[0] for pair in kept] + [pair[1] for pair in kept if len(pair) > 1], unpaired


def parse_pairwise(text: str, template: JudgeTemplate, dimensions: tuple[str, ...]):
    """(``{"verdict": {...}, "criteria": {criterion: {raw, reason, evidence, rubric_dimension}}}``, problems)."""
    parsed, problems = {}, []
    examples = template.output_spec.examples
    try:
        verdict = parse_verdict(text, examples)
        parsed["verdict"] = {
            "winner": verdict.winner,
            "confidence": verdict.confidence,
            "baseline_score": verdict.baseline_score,
            "enhanced_score": verdict.enhanced_score,
        }
    except JudgeOutputError as exc:
        return {}, [("overall", str(exc))]
    obj = extract_json(answer_text(text), examples)  # the object the verdict was read from
    keys = {normalize_key(k): k for k in obj}
    criteria = {}
    for criterion in dimensions:
        block = obj.get(keys.get(normalize_key(criterion), ""), None)
        if not isinstance(block, dict):
            problems.append((criterion, f"no object for criterion {criterion!r}"))
            continue
        inner = {normalize_key(k): v for k, v in block.items()}
        try:
            raw = read_value(inner.get("score"), template.output_spec, f"{criterion!r} → 'score'")
            template.scale.check(raw)
        except JudgeOutputError as exc:
            problems.append((criterion, str(exc)))
            continue
        evidence = inner.get("evidence", [])
        criteria[criterion] = {
            "raw": raw,
            "reason": str(inner.get("reasoning") or inner.get("reason") or ""),
            "evidence": [str(e) for e in evidence] if isinstance(evidence, list) else [str(evidence)],
            "rubric_dimension": template.criteria_map.get(criterion, ""),
        }
    parsed["criteria"] = criteria
    return parsed, problems
