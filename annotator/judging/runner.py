"""Score every item of a batch with one judge template: bounded concurrency, every output kept.

Each call's text is parsed per dimension with ``hcs.judge_output``; a score becomes a ``JudgeScore``
(raw output kept), an unreadable output or a failed call becomes a ``JudgeFailure`` — nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from django.utils import timezone

from annotator.judging.client import ChatClient, JudgeCallError
from annotator.judging.templates import JudgeTemplate, item_variables
from annotator.models import Batch, Item, Judge, JudgeFailure, JudgeScore
from annotator.services.judges import judge_get_or_create, judge_run_save
from hcs.judge_output import JudgeOutputError, parse_score


@dataclass
class RunResult:
    judge: Judge
    n_items: int
    n_scores: int = 0
    retries: int = 0
    failures: list[JudgeFailure] = field(default_factory=list)


def _score_item(item: Item, template: JudgeTemplate, client: ChatClient, dimensions, rubric) -> tuple:
    messages = template.render(item_variables(item, rubric))
    try:
        text, retries = client.complete(messages)
    except JudgeCallError as exc:
        return item, None, [("", f"call failed: {exc}")], {}, 0
    parsed, problems = {}, []
    for dimension in dimensions:
        try:
            score = parse_score(
                text,
                dimension=dimension if len(dimensions) > 1 or dimension != "overall" else None,
                verdict_key=template.verdict_key,
                reason_key=template.reason_key,
            )
            parsed[dimension] = (score, template.scale.to_rubric(score.value, rubric.scale_min, rubric.scale_max))
        except JudgeOutputError as exc:
            problems.append((dimension, str(exc)))
    return item, text, problems, parsed, retries


def judge_run(
    *,
    batch: Batch,
    template: JudgeTemplate,
    client: ChatClient,
    judge_name: str,
    concurrency: int = 4,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    rubric = batch.rubric_obj
    dimensions = template.dimension_keys(rubric)
    judge = judge_get_or_create(
        name=judge_name, model=client.model, template=template.name, template_version=template.version
    )
    items = list(Item.objects.filter(batch=batch).order_by("position", "id")[: limit or None])
    result = RunResult(judge=judge, n_items=len(items))
    scores: list[JudgeScore] = []
    now = timezone.now()
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = [pool.submit(_score_item, item, template, client, dimensions, rubric) for item in items]
        for future in as_completed(futures):
            item, text, problems, parsed, retries = future.result()
            result.retries += retries
            for dimension, (score, value) in parsed.items():
                scores.append(
                    JudgeScore(
                        judge=judge, item=item, dimension=dimension, raw_value=score.value,
                        scale_min=template.scale.min, scale_max=template.scale.max,
                        higher_is_better=template.scale.higher_is_better, value=value,
                        reason=score.reason, raw_output=text, imported_at=now,
                    )
                )
            for dimension, error in problems:
                result.failures.append(
                    JudgeFailure(judge=judge, item=item, dimension=dimension, error=error, raw_output=text or "", created_at=now)
                )
            done += 1
            if progress:
                progress(done, len(items))
    judge_run_save(judge=judge, scores=scores, failures=result.failures)
    result.n_scores = len(scores)
    return result
