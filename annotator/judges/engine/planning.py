"""What a judge run would call, before it calls anything: every item's prompt rendered (a refusal naming each
item that cannot fill the template), the pairs of a pairwise run, the repeats of ``--samples``, the parser of the
answers, and the estimate of a dry run (tokens, cost, and what the cost cap allows)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from annotator.counted import counted
from annotator.judges.engine.budget import (
    DEFAULT_OUTPUT_TOKENS,
    Estimate,
    bound_for_cap,
    call_bound,
    cap_bound,
    estimate,
)
from annotator.judges.engine.cache import request_key
from annotator.judges.engine.calls import Task, refusal
from annotator.judges.engine.client import ChatClient
from annotator.judges.engine.logprobs import score_distributions
from annotator.judges.engine.options import RunOptions
from annotator.judges.engine.pairwise import pair_tasks, parse_pairwise
from annotator.judges.engine.structured import response_format
from annotator.judges.engine.templates import JudgeTemplate, TemplateError, item_fields
from annotator.judges.selectors.cache import judge_calls_cached, judge_output_tokens
from annotator.models import Batch, CalibrationSet, Item
from hcs.calibration.logprobs import integer_scale
from hcs.judge_output import JudgeOutputError, parse_named_scores, parse_score
from hcs.rubric import Rubric

TOP_LOGPROBS = 10  # alternatives asked for per token: every score of a 1–10 scale fits


def render_items(items: list[Item], template: JudgeTemplate, rubric: Rubric) -> list[Task]:
    """Every item's prompt. Raises TemplateError naming each item and variable that cannot be filled."""
    tasks, problems = [], []
    for item in items:
        try:
            tasks.append(Task(item, None, template.render(item_fields(item, rubric))))
        except TemplateError as exc:
            problems.append(f"item `{item.item_id}`: {exc}")
    if problems:
        raise refusal(problems, ("item", "items"), "cannot fill the template")
    return tasks


def batch_items(batch: Batch, limit: int | None = None, only: list[int] | None = None) -> list[Item]:
    """The batch's items in file order; ``only``: just these pks (the calibration set)."""
    items = Item.objects.filter(batch=batch).order_by("position", "id")
    if only is not None:
        items = items.filter(pk__in=only)
    return list(items[: limit or None])


def calibration_only(batch: Batch) -> list[int]:
    """The pks of the batch's frozen calibration set; TemplateError (before any call) when it has none."""
    chosen = CalibrationSet.objects.filter(batch=batch).first()
    if chosen is None:
        raise TemplateError(
            f"batch \u201c{batch.name}\u201d has no calibration set: mark one first "
            f'(python manage.py calibration_set "{batch.name}" --sample 50, or on its report\'s calibration set page)'
        )
    return list(chosen.items.values_list("pk", flat=True))


def parse_call(
    text: str, template: JudgeTemplate, dimensions: tuple[str, ...], rubric: Rubric, logprobs=None
):
    """(``{"scores": {dimension: {raw, value, reason[, distribution]}}}``, [(dimension, problem)]) for one
    answer; ``distribution`` (G-Eval's weighted score and the confidence) where ``logprobs`` give one.
    A template of several dimensions gets a score only for each dimension its answer names."""
    spec = template.output_spec
    if len(dimensions) != 1:
        try:
            read, problems = parse_named_scores(text, dimensions, spec=spec)
        except JudgeOutputError as exc:
            read, problems = {}, [("", str(exc))]
    else:
        (dimension,) = dimensions
        try:
            read = {
                dimension: parse_score(
                    text, dimension=None if dimension == "overall" else dimension, spec=spec
                )
            }
            problems = []
        except JudgeOutputError as exc:
            read, problems = {}, [(dimension, str(exc))]
    scores = {}
    for dimension, score in read.items():
        try:
            value = template.scale.to_rubric(score.value, rubric.scale_min, rubric.scale_max)
        except JudgeOutputError as exc:
            problems.append((dimension, str(exc)))
            continue
        scores[dimension] = {"raw": score.value, "value": value, "reason": score.reason}
    for dimension, dist in score_distributions(logprobs, scores, template).items():
        raw = scores[dimension]["raw"]
        scores[dimension]["distribution"] = {
            **dist.to_json(),
            "confidence": dist.probability(raw),
            "weighted_value": template.scale.to_rubric(dist.weighted, rubric.scale_min, rubric.scale_max),
        }
    return ({"scores": scores} if scores else {}), problems


def plan_run(
    batch: Batch,
    template: JudgeTemplate,
    client: ChatClient,
    options: RunOptions,
    items: list[Item] | None = None,
) -> tuple[list[Task], Callable[..., tuple], list[str]]:
    """(every call a run makes, with its rendered messages; the parser of its answers; notes), with ``client``
    set to ask for structured output and logprobs as the template allows. ``items``: a scoring run calls these
    (items with the batch's rubric), in this order, instead of the batch's. Calls nothing; raises TemplateError."""
    rubric = batch.rubric_obj
    dimensions = template.dimension_keys(rubric)
    notes = [f"Scale conflict in the template: {w}." for w in template.scale_warnings]
    _check_kind(template, options)
    pairwise, limit = options.pair, options.limit
    only = calibration_only(batch) if options.calibration_set else None
    if pairwise:
        tasks, unpaired = pair_tasks(batch, template, *pairwise, limit=limit, swap=options.swap, only=only)
        notes += (
            [
                f"{counted(len(unpaired), 'prompt', 'prompts')} without a pair {'was' if len(unpaired) == 1 else 'were'} left out, e.g. {unpaired[0]}."
            ]
            if unpaired
            else []
        )

        def parse(text, logprobs=None):
            return parse_pairwise(text, template, dimensions)
    else:
        chosen = items if items is not None else batch_items(batch, limit, only)
        tasks = render_items(chosen, template, rubric)
        tasks += [replace(t, sample=n) for n in range(1, options.samples) for t in tasks]

        def parse(text, logprobs=None):
            return parse_call(text, template, dimensions, rubric, logprobs)

    if not template.pairwise:
        client.response_format = response_format(template, rubric) if options.structured else None
        scale = integer_scale(template.scale.min, template.scale.max)
        client.top_logprobs = TOP_LOGPROBS if options.logprobs and scale else 0
    return tasks, parse, notes


def _check_kind(template: JudgeTemplate, options: RunOptions) -> None:
    """A pairwise template runs pairwise, a scoring one does not; --samples and --swap fit only one of them.
    Raises TemplateError."""
    pairwise = options.pair
    if template.pairwise and not pairwise:
        raise TemplateError(
            f"{template.name} is a pairwise template: run it with --pairwise "
            "--baseline-system A --enhanced-system B"
        )
    if options.samples > 1 and pairwise:
        raise TemplateError(
            "--samples repeats the calls of a scoring template; it does not apply to --pairwise"
        )
    if options.swap and not pairwise:
        raise TemplateError("--swap runs each pair in both orders: it needs --pairwise")
    if pairwise and not template.pairwise:
        raise TemplateError(
            f"{template.name} scores one response at a time; --pairwise needs a pairwise "
            "template such as geval_pairwise"
        )


def output_estimate(client: ChatClient, template: JudgeTemplate) -> tuple[int, str]:
    """(output tokens per call, how they were estimated): see ``annotator.judges.engine.budget``."""
    if client.max_tokens:
        return client.max_tokens, f"--max-tokens {client.max_tokens} per call (an upper bound)"
    seen = judge_output_tokens(model=client.model, template_hash=template.content_hash)
    if seen is not None:
        return round(
            seen
        ), f"{round(seen)} per call, the mean of this model's earlier answers to this template"
    return (
        DEFAULT_OUTPUT_TOKENS,
        f"{DEFAULT_OUTPUT_TOKENS} per call (no earlier answers of this model to this template)",
    )


def judge_run_estimate(
    batch: Batch, template: JudgeTemplate, client: ChatClient, options: RunOptions
) -> Estimate:
    """What a run would call, and its estimated tokens and cost: renders every prompt, calls nothing, saves
    nothing. Calls the cache would serve are counted apart. ``options.max_cost``: the estimate also gives the
    most the capped run can spend (and the client sends the cap's ``max_tokens``, as the run would)."""
    max_cost, prices = options.max_cost, options.prices
    bound_for_cap(client, max_cost)
    tasks, _, _ = plan_run(batch, template, client, options)
    tasks = [replace(t, key=request_key(client, t)) for t in tasks]
    hits = judge_calls_cached(keys=[t.key for t in tasks]) if options.cache else {}
    paid = [t for t in tasks if t.key not in hits]
    tokens_out, basis = output_estimate(client, template)
    bound = None
    if max_cost is not None:
        bound = cap_bound(paid, limit=max_cost, max_tokens=call_bound(client) or tokens_out, prices=prices)
    return estimate(
        paid,
        cached=len(tasks) - len(paid),
        output_tokens=tokens_out,
        output_basis=basis,
        prices=prices,
        bound=bound,
    )
