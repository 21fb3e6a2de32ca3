"""Writing judge scores, pairwise verdicts and judge run failures, all or nothing."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.utils import timezone

from annotator.counted import counted
from annotator.judges.imports.judge_file import parse_judge_file
from annotator.judges.imports.verdict_file import parse_verdict_file
from annotator.models import (
    Batch,
    Item,
    Judge,
    JudgeCriterionScore,
    JudgeScore,
    PairwiseVerdict,
)
from annotator.uploads.files.errors import ImportRefused, RowError
from annotator.uploads.files.json_text import SURROGATE
from hcs.judge_output import JudgeScale, OutputSpec

NAME_MAX_LENGTH = Judge._meta.get_field("name").max_length


def _judge_errors(name: str) -> list[RowError]:
    clean = (name or "").strip()
    if not clean:
        return [RowError(None, None, "The judge needs a name.")]
    if len(clean) > NAME_MAX_LENGTH:
        return [RowError(None, None, f"The judge name is longer than {NAME_MAX_LENGTH} characters.")]
    if "\x00" in clean or SURROGATE.search(clean):  # no database stores either
        return [
            RowError(
                None,
                None,
                "The judge name contains a NUL character or a lone surrogate (text that is "
                "not UTF-8); use plain text.",
            )
        ]
    return []


@transaction.atomic
def judge_get_or_create(
    *, name: str, model: str = "", template: str = "", template_version: str = ""
) -> Judge:
    """The judge called ``name``; model and template fill in blanks and are never silently overwritten."""
    errors = _judge_errors(name)
    if errors:
        raise ImportRefused(errors)
    judge, _ = Judge.objects.get_or_create(name=name.strip())
    changed = False
    for field, value in (("model", model), ("template", template), ("template_version", template_version)):
        value = (value or "").strip()
        current = getattr(judge, field)
        if value and current and value != current:
            raise ImportRefused(
                [
                    (
                        f"Judge \u201c{judge.name}\u201d already has {field} \u201c{current}\u201d, not \u201c{value}\u201d; "
                        "use another judge name for another configuration."
                    )
                ]
            )
        if value and not current:
            setattr(judge, field, value)
            changed = True
    if changed:
        judge.save()
    return judge


def _rubric_scale(batch: Batch) -> tuple[int, int]:
    rubric = batch.rubric_obj
    return (rubric.scale_min, rubric.scale_max)


@transaction.atomic
def judge_scores_import(
    *,
    batch: Batch,
    judge_name: str,
    data: bytes,
    filename: str,
    scale: JudgeScale,
    model: str = "",
    template: str = "",
    template_version: str = "",
    output: OutputSpec | None = None,
    criteria: Mapping[str, str] | None = None,
) -> int:
    """Import a judge score file into ``batch``; replaces the judge's earlier scores of the same item × dimension.

    Raises ``FileRefused`` or ``ImportRefused`` (every bad row, numbered) and then saves nothing.
    """
    name_errors = _judge_errors(judge_name)
    items = dict(Item.objects.filter(batch=batch).values_list("item_id", "pk"))
    parsed = parse_judge_file(
        data,
        filename=filename,
        item_ids=items.keys(),
        dimensions=batch.rubric_obj.dimension_keys,
        scale=scale,
        rubric_scale=_rubric_scale(batch),
        output=output,
        criteria=criteria,
    )
    if name_errors or parsed.errors:
        raise ImportRefused(name_errors + parsed.errors)
    judge = judge_get_or_create(
        name=judge_name, model=model, template=template, template_version=template_version
    )
    now = timezone.now()
    objects = [
        JudgeScore(
            judge=judge,
            item_id=items[row.item_id],
            dimension=row.dimension,
            raw_value=row.raw_value,
            scale_min=scale.min,
            scale_max=scale.max,
            higher_is_better=scale.higher_is_better,
            value=row.value,
            reason=row.reason,
            raw_output=row.raw_output,
            imported_at=now,
        )
        for row in parsed.rows
        if row.dimension
    ]
    judge_scores_save(judge=judge, scores=objects)
    _criteria_save(judge, [r for r in parsed.rows if r.criterion], items, scale, now)
    return len(parsed.rows)


def _criteria_save(judge: Judge, rows, items: dict[str, int], scale: JudgeScale, now) -> None:
    """The judge's own criteria, under their own names, replacing the judge's earlier ones."""
    for criterion in {r.criterion for r in rows}:
        item_ids = [items[r.item_id] for r in rows if r.criterion == criterion]
        JudgeCriterionScore.objects.filter(
            judge=judge, criterion=criterion, enhanced=None, item_id__in=item_ids
        ).delete()
    JudgeCriterionScore.objects.bulk_create(
        JudgeCriterionScore(
            judge=judge,
            item_id=items[r.item_id],
            criterion=r.criterion,
            rubric_dimension=r.dimension,
            raw_value=r.raw_value,
            scale_min=scale.min,
            scale_max=scale.max,
            higher_is_better=scale.higher_is_better,
            reason=r.reason,
            created_at=now,
        )
        for r in rows
    )


def judge_scores_save(*, judge: Judge, scores: list[JudgeScore]) -> None:
    """Replace ``judge``'s scores for the item × dimension pairs in ``scores``. Call inside a transaction."""
    by_dimension: dict[str, list[int]] = {}
    for score in scores:
        by_dimension.setdefault(score.dimension, []).append(score.item_id)
    for dimension, item_ids in by_dimension.items():
        JudgeScore.objects.filter(judge=judge, dimension=dimension, item_id__in=item_ids).delete()
    JudgeScore.objects.bulk_create(scores, batch_size=2000)


def prompt_pairs(*, batch: Batch, baseline_system: str | None) -> dict[str, tuple[str, str] | str]:
    """Each prompt's (baseline item id, enhanced item id), or why the prompt has no such pair."""
    by_prompt: dict[str, list[tuple[str, str]]] = {}
    for prompt_id, item_id, system_id in Item.objects.filter(batch=batch).values_list(
        "prompt_id", "item_id", "system_id"
    ):
        by_prompt.setdefault(prompt_id, []).append((item_id, system_id))
    pairs: dict[str, tuple[str, str] | str] = {}
    for prompt_id, members in by_prompt.items():
        if not baseline_system:
            pairs[prompt_id] = "a pair named by prompt_id needs the baseline system (--baseline-system)"
            continue
        baseline = [i for i, s in members if s == baseline_system]
        others = [i for i, s in members if s != baseline_system]
        if len(baseline) != 1 or len(others) != 1:
            pairs[prompt_id] = (
                f"`{prompt_id}` has {counted(len(baseline), 'item', 'items')} of system `{baseline_system}` and {counted(len(others), 'other', 'others')}; "
                "a pair needs exactly one of each (name the items with baseline_item_id and enhanced_item_id)"
            )
        else:
            pairs[prompt_id] = (baseline[0], others[0])
    return pairs


@transaction.atomic
def pairwise_verdicts_import(
    *,
    batch: Batch,
    judge_name: str,
    data: bytes,
    filename: str,
    baseline_system: str | None = None,
    model: str = "",
    template: str = "",
) -> int:
    """Import pairwise verdicts; replaces the judge's earlier verdicts on the same pairs. All or nothing."""
    name_errors = _judge_errors(judge_name)
    items = dict(Item.objects.filter(batch=batch).values_list("item_id", "pk"))
    parsed = parse_verdict_file(
        data,
        filename=filename,
        item_ids=items.keys(),
        prompt_pairs=prompt_pairs(batch=batch, baseline_system=baseline_system),
    )
    if name_errors or parsed.errors:
        raise ImportRefused(name_errors + parsed.errors)
    judge = judge_get_or_create(name=judge_name, model=model, template=template)
    now = timezone.now()
    # A new verdict on a pair replaces the judge's earlier one: one read and one delete, not one per row.
    pairs = {(items[row.baseline], items[row.enhanced]) for row in parsed.rows}
    earlier = PairwiseVerdict.objects.filter(judge=judge, baseline_id__in={b for b, _ in pairs})
    replaced = [pk for pk, b, e in earlier.values_list("pk", "baseline_id", "enhanced_id") if (b, e) in pairs]
    PairwiseVerdict.objects.filter(pk__in=replaced).delete()
    PairwiseVerdict.objects.bulk_create(
        PairwiseVerdict(
            judge=judge,
            baseline_id=items[row.baseline],
            enhanced_id=items[row.enhanced],
            winner=row.winner,
            confidence=row.confidence,
            reason=row.reason,
            raw_output=row.raw_output,
            imported_at=now,
        )
        for row in parsed.rows
    )
    return len(parsed.rows)
