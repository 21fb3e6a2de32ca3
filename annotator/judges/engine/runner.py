"""Score a batch with one judge template: bounded concurrency, every call saved the moment it completes.

The run renders every prompt first and refuses, before any call, when a variable cannot be filled.
It then calls only what this judge has not answered yet (``retry_failed`` adds the failed, unreadable
and ambiguous calls, ``retry_unknown`` the calls left ``sent`` by a killed run, ``force`` redoes
everything). Calls run in a thread pool with at most ``concurrency`` in flight; the main thread writes
each call's ledger row as ``sent`` before handing it to the pool and saves each result as it arrives.
Setting ``client.stop`` (Ctrl-C, SIGTERM, a cancelled job) stops new calls at once; calls already in
flight finish and are saved, calls waiting to retry give up and are left for the next run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from uuid import UUID

from annotator.judges.engine.batch_runner import run_batch
from annotator.judges.engine.budget import (
    DEFAULT_OUTPUT_TOKENS,
    WAIT,
    CostCap,
    Estimate,
    bound_for_cap,
    call_bound,
    cap_bound,
    estimate,
)
from annotator.judges.engine.cache import request_key
from annotator.judges.engine.calls import Task, refusal
from annotator.judges.engine.client import (
    ChatClient,
    JudgeCallError,
    JudgeRunFatal,
    RunStopped,
)
from annotator.judges.engine.logprobs import score_distributions
from annotator.judges.engine.pairwise import pair_tasks, parse_pairwise
from annotator.judges.engine.progress import Prices, RunProgress
from annotator.judges.engine.structured import response_format
from annotator.judges.engine.templates import JudgeTemplate, TemplateError, item_fields
from annotator.judges.selectors.cache import judge_calls_cached, judge_output_tokens
from annotator.judges.services.runs import (
    CLAIM_RENEW_SECONDS,
    CallOutcome,
    judge_call_states,
    judge_calls_in_batches,
    judge_calls_mark_sent,
    judge_calls_record,
    judge_calls_record_many,
    judge_calls_set_batch,
    judge_calls_unsend,
    judge_for_run,
    judge_run_claim,
    judge_run_release,
    judge_run_renew,
)
from annotator.models import Batch, CalibrationSet, Item, Judge, JudgeCall
from hcs.calibration.logprobs import integer_scale
from hcs.judge_output import JudgeOutputError, parse_named_scores, parse_score
from hcs.rubric import Rubric

TOP_LOGPROBS = 10  # alternatives asked for per token: every score of a 1–10 scale fits


@dataclass
class RunResult:
    judge: Judge
    note: str
    progress: RunProgress
    stopped: bool = False
    failures: list[tuple[str, str]] = field(default_factory=list)  # (item id, error)
    unknown: list[str] = field(default_factory=list)  # calls sent by a killed run, not called again
    capped: bool = False  # stopped starting calls at the cost cap
    waiting_batches: list[str] = field(default_factory=list)  # --batch: provider batches still running
    failed_outputs: list[str] = field(default_factory=list)  # raw outputs of failed calls, first ones first


def render_items(items: list[Item], template: JudgeTemplate, rubric: Rubric) -> list[Task]:
    """Every item's prompt. Raises TemplateError naming each item and variable that cannot be filled."""
    tasks, problems = [], []
    for item in items:
        try:
            tasks.append(Task(item, None, template.render(item_fields(item, rubric))))
        except TemplateError as exc:
            problems.append(f"item `{item.item_id}`: {exc}")
    if problems:
        raise refusal(problems, "item(s) cannot fill the template")
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


def _slot(task: Task) -> tuple[int, int | None, int]:
    return (task.item.pk, task.enhanced.pk if task.enhanced else None, task.sample)


def task_label(task: Task) -> str:
    label = task.item.item_id + (f" vs {task.enhanced.item_id}" if task.enhanced else "")
    return label + (f" (sample {task.sample})" if task.sample else "")


def tasks_to_call(
    tasks: list[Task], states: dict, *, retry_failed: bool, force: bool, retry_unknown: bool = False
) -> tuple[list[Task], list[Task]]:
    """(the tasks a rerun still has to call, the ones left out because a killed run sent them and their
    outcome is unknown). Called: never called, failed, unreadable or ambiguous with ``retry_failed``, sent
    with ``retry_unknown``, or all with ``force``."""
    keep, unknown = [], []
    for task in tasks:
        state = states.get((task.item.pk, task.enhanced.pk if task.enhanced else None, task.sample))
        if state == JudgeCall.SENT and not (force or retry_unknown):
            unknown.append(task)
        elif (
            force
            or state is None
            or (state == JudgeCall.SENT and retry_unknown)
            or (retry_failed and state in (JudgeCall.FAILED, *JudgeCall.NOT_READ))
        ):
            keep.append(task)
    return keep, unknown


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


def call_one(task: Task, client: ChatClient, parse: Callable[..., tuple]) -> CallOutcome:
    """One call and its parse (in a worker thread; no database)."""
    outcome = CallOutcome(
        item=task.item,
        enhanced=task.enhanced,
        status=JudgeCall.OK,
        prompt=task.messages,
        sample=task.sample,
        swapped=task.swapped,
        request_key=task.key,
    )
    try:
        result = client.complete(task.messages)
    except JudgeCallError as exc:
        outcome.status, outcome.raw_output, outcome.attempts = JudgeCall.FAILED, exc.body, exc.attempts
        outcome.http_status, outcome.problems = exc.status, [("", f"call failed: {exc}")]
        outcome.request = client.request_params()
        return outcome
    outcome.raw_output, outcome.attempts, outcome.latency = result.text, result.attempts, result.latency
    outcome.tokens_in, outcome.tokens_out, outcome.http_status = result.tokens_in, result.tokens_out, 200
    outcome.sent, outcome.output_mode = result.sent, result.output_mode
    outcome.request = result.request
    outcome.parsed, outcome.problems = parse(result.text, result.logprobs)
    outcome.status = JudgeCall.answered_status(outcome.problems)
    return outcome


CACHE_SAVE_CHUNK = 250  # cached outcomes saved per transaction


def served_from_cache(
    tasks: list[Task], hits: dict[str, JudgeCall], *, template_hash: str, parse: Callable[..., tuple]
) -> list[CallOutcome]:
    """An outcome per task from the stored call with its key: the stored reading when the template text is the
    same, else the stored answer read again by this template."""
    outcomes = []
    for task in tasks:
        hit = hits[task.key]
        if hit.template_hash == template_hash:
            parsed, problems = hit.parsed, []
        else:
            parsed, problems = parse(hit.raw_output, None)
        outcomes.append(
            CallOutcome(
                item=task.item,
                enhanced=task.enhanced,
                prompt=task.messages,
                sample=task.sample,
                swapped=task.swapped,
                status=JudgeCall.answered_status(problems),
                raw_output=hit.raw_output,
                parsed=parsed,
                problems=problems,
                http_status=hit.http_status,
                tokens_in=hit.tokens_in,
                tokens_out=hit.tokens_out,
                attempts=0,
                sent=hit.params,
                output_mode=hit.output_mode,
                request=hit.request,
                request_key=task.key,
                cached=True,
            )
        )
    return outcomes


def run_tasks(
    tasks: list[Task],
    *,
    client: ChatClient,
    concurrency: int,
    parse: Callable[..., tuple],
    save: Callable[[list[CallOutcome]], None],
    progress: RunProgress,
    on_progress: Callable[[RunProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    mark_sent: Callable[[list[Task]], None] | None = None,
    unsend: Callable[[list[Task]], None] | None = None,
    cap: CostCap | None = None,
) -> tuple[bool, list[CallOutcome]]:
    """Call ``tasks`` with at most ``concurrency`` in flight, ``save`` the outcomes as they arrive.

    ``mark_sent`` writes the ledger rows of the tasks about to be handed to the pool; ``unsend`` removes
    those of calls that ended with no answer (stopped while waiting to retry, or the run could not go on).
    The pool is refilled before the outcomes that arrived together are saved (in one transaction).
    ``cap`` stops starting calls (those in flight finish) once the next would take the estimated spend past it.

    Returns (stopped early, the failed outcomes). Raises JudgeRunFatal after saving what finished.
    """
    stop, fatal, failed = client.stop, None, []
    queue, pending, task_of = iter(tasks), set(), {}
    held: list[Task] = []  # the next task, waiting for calls in flight to leave room under the cap
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:

        def refill():
            batch = []
            while not stop.is_set() and len(pending) + len(batch) < concurrency:
                task = held.pop() if held else next(queue, None)
                if task is None:
                    break
                if cap is not None:
                    fits = cap.may_start(task)
                    if not fits:
                        if fits is WAIT:
                            held.append(task)
                        break
                batch.append(task)
            if batch and mark_sent is not None:
                mark_sent(batch)
            for task in batch:
                future = pool.submit(call_one, task, client, parse)
                task_of[future] = task
                pending.add(future)

        refill()
        while pending:
            try:
                done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            except KeyboardInterrupt:  # no handler installed: stop new calls, keep what finishes
                stop.set()
                continue
            if should_stop is not None and not stop.is_set() and should_stop():
                stop.set()
            arrived, unanswered = [], []
            for future in done:
                task = task_of.pop(future)
                try:
                    outcome = future.result()
                except RunStopped:
                    unanswered.append(task)
                    continue
                except JudgeRunFatal as exc:
                    fatal = fatal or exc
                    stop.set()
                    unanswered.append(task)
                    continue
                finally:
                    if cap is not None:
                        ok = future.exception() is None
                        cap.finished(
                            task,
                            *(
                                (future.result().tokens_in, future.result().tokens_out)
                                if ok
                                else (None, None)
                            ),
                            paid=ok,
                        )
                arrived.append(outcome)
            # Refilled once the calls that arrived are paid: the cap then counts them at their real cost.
            refill()
            if unanswered and unsend is not None:
                unsend(unanswered)
            if not arrived:
                continue
            save(arrived)
            for outcome in arrived:
                progress.add(
                    ok=outcome.status == JudgeCall.OK,
                    attempts=outcome.attempts,
                    tokens_in=outcome.tokens_in,
                    tokens_out=outcome.tokens_out,
                    problems=outcome.problems,
                )
                if outcome.status != JudgeCall.OK:
                    failed.append(outcome)
            if on_progress is not None:
                on_progress(progress)
    if fatal is not None:
        raise fatal
    capped = cap is not None and cap.reached
    return (stop.is_set() or capped) and progress.done < progress.total, failed


def plan_run(
    *,
    batch: Batch,
    template: JudgeTemplate,
    client: ChatClient,
    limit: int | None = None,
    pairwise: tuple[str, str] | None = None,
    swap: bool = False,
    samples: int = 1,
    calibration_set: bool = False,
    structured: bool = True,
    logprobs: bool = True,
) -> tuple[list[Task], Callable[..., tuple], list[str]]:
    """(every call a run makes, with its rendered messages; the parser of its answers; notes), with ``client``
    set to ask for structured output and logprobs as the template allows. Calls nothing; raises TemplateError."""
    rubric = batch.rubric_obj
    dimensions = template.dimension_keys(rubric)
    notes = [f"Scale conflict in the template: {w}." for w in template.scale_warnings]
    if template.pairwise and not pairwise:
        raise TemplateError(
            f"{template.name} is a pairwise template: run it with --pairwise "
            "--baseline-system A --enhanced-system B"
        )
    if samples > 1 and pairwise:
        raise TemplateError(
            "--samples repeats the calls of a scoring template; it does not apply to --pairwise"
        )
    if swap and not pairwise:
        raise TemplateError("--swap runs each pair in both orders: it needs --pairwise")
    if pairwise and not template.pairwise:
        raise TemplateError(
            f"{template.name} scores one response at a time; --pairwise needs a pairwise "
            "template such as geval_pairwise"
        )
    only = calibration_only(batch) if calibration_set else None
    if pairwise:
        tasks, unpaired = pair_tasks(batch, template, *pairwise, limit=limit, swap=swap, only=only)
        notes += (
            [f"{len(unpaired)} prompt(s) without a pair were left out, e.g. {unpaired[0]}."]
            if unpaired
            else []
        )

        def parse(text, logprobs=None):
            return parse_pairwise(text, template, dimensions)
    else:
        tasks = render_items(batch_items(batch, limit, only), template, rubric)
        tasks += [replace(t, sample=n) for n in range(1, samples) for t in tasks]

        def parse(text, logprobs=None):
            return parse_call(text, template, dimensions, rubric, logprobs)

    if not template.pairwise:
        client.response_format = response_format(template, rubric) if structured else None
        client.top_logprobs = (
            TOP_LOGPROBS if logprobs and integer_scale(template.scale.min, template.scale.max) else 0
        )
    return tasks, parse, notes


def judge_run(
    *,
    batch: Batch,
    template: JudgeTemplate,
    client: ChatClient,
    judge_name: str,
    concurrency: int = 8,
    limit: int | None = None,
    retry_failed: bool = False,
    retry_unknown: bool = False,
    force: bool = False,
    pairwise: tuple[str, str] | None = None,
    swap: bool = False,
    samples: int = 1,
    calibration_set: bool = False,
    structured: bool = True,
    logprobs: bool = True,
    prices: Prices | None = None,
    progress: Callable[[RunProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    cache: bool = True,
    max_cost: float | None = None,
    batch_api: bool = False,
    poll_seconds: float = 30.0,
    job_id: UUID | str | None = None,
) -> RunResult:
    """Score ``batch`` with ``template``. Raises TemplateError (before any call) or JudgeRunFatal.

    ``pairwise`` is (baseline system, enhanced system) for a pairwise template: one call per prompt_id;
    ``swap`` adds a second call per prompt_id with the two responses in the other order. ``samples`` > 1
    calls every item that many times (sample 0 gives the judge's scores; the repeats measure its noise).
    ``calibration_set`` calls only the items of the batch's frozen calibration set (a pair: both of its items).
    ``structured`` asks a scoring template's answers for its JSON schema, ``logprobs`` (on an integer scale)
    for the score token's distribution; an endpoint that refuses either gets free text or no logprobs.
    ``cache`` serves a request identical to one already answered (by any judge, batch or run) from the stored
    call instead of paying for it again; every call records its key either way. ``max_cost`` (with ``prices``)
    stops starting calls before the estimated spend of this run, calls in flight included, would pass it.
    ``batch_api`` sends the calls through the provider's batch API and polls it every ``poll_seconds``
    (see ``annotator.judges.engine.batch_runner``); it also fetches batches an earlier run left waiting.
    ``job_id`` is the background job carrying the run out (none: the command line); the judge's claim records it.
    """
    bounded = bound_for_cap(client, max_cost)  # before the judge's identity: max_tokens is part of it
    tasks, parse, notes = plan_run(
        batch=batch,
        template=template,
        client=client,
        limit=limit,
        pairwise=pairwise,
        swap=swap,
        samples=samples,
        calibration_set=calibration_set,
        structured=structured,
        logprobs=logprobs,
    )
    notes += [bounded] if bounded else []
    judge, note = judge_for_run(
        name=judge_name,
        model=client.model,
        template=template,
        params={**client.identity, "scale_warnings": template.scale_warnings},
    )
    # One run per judge at a time: none pays for an item another is calling.
    claim = judge_run_claim(judge, job_id=job_id)
    renewed = [time.monotonic()]

    def stop_or_renew() -> bool:
        if time.monotonic() - renewed[0] >= CLAIM_RENEW_SECONDS:
            if not judge_run_renew(judge, claim):
                notes.append(
                    "The run stopped: it stalled so long that another run took the judge over; "
                    "calls finished before are saved."
                )
                return True
            renewed[0] = time.monotonic()
        return should_stop() if should_stop is not None else False

    def save(outcomes: list[CallOutcome]) -> None:
        judge_calls_record(
            judge=judge,
            template=template,
            model=client.model,
            params=client.params,
            outcomes=outcomes,
            prices=prices,
        )

    def mark_sent(batch: list[Task]) -> None:
        judge_calls_mark_sent(
            judge=judge,
            template=template,
            model=client.model,
            params=client.params,
            tasks=batch,
            request=client.request_params(),
        )

    try:
        todo, unknown = tasks_to_call(
            tasks,
            judge_call_states(judge=judge),
            retry_failed=retry_failed,
            force=force,
            retry_unknown=retry_unknown,
        )
        in_batches = judge_calls_in_batches(judge=judge) if batch_api else {}
        waiting: dict[str, list[Task]] = {}
        for task in [t for t in [*unknown, *todo] if _slot(t) in in_batches]:
            waiting.setdefault(in_batches[_slot(task)], []).append(
                replace(task, key=request_key(client, task))
            )
        unknown = [t for t in unknown if _slot(t) not in in_batches]
        todo = [t for t in todo if _slot(t) not in in_batches]
        todo = [replace(t, key=request_key(client, t)) for t in todo]
        hits = judge_calls_cached(keys=[t.key for t in todo]) if cache else {}
        served = [t for t in todo if t.key in hits]
        todo = [t for t in todo if t.key not in hits]
        resumed = sum(len(v) for v in waiting.values())
        state = RunProgress(
            total=len(todo) + len(served) + resumed,
            skipped=len(tasks) - len(todo) - len(served) - resumed,
            prices=prices or Prices(),
        )
        cached_failed = []
        for start in range(0, len(served), CACHE_SAVE_CHUNK):
            outcomes = served_from_cache(
                served[start : start + CACHE_SAVE_CHUNK],
                hits,
                template_hash=template.content_hash,
                parse=parse,
            )
            judge_calls_record_many(
                judge=judge,
                template=template,
                model=client.model,
                params=client.params,
                outcomes=outcomes,
                prices=prices,
            )
            for outcome in outcomes:
                state.add(
                    ok=outcome.status == JudgeCall.OK,
                    attempts=0,
                    tokens_in=None,
                    tokens_out=None,
                    cached=True,
                    problems=outcome.problems,
                )
                if outcome.status != JudgeCall.OK:
                    cached_failed.append(outcome)
            if progress is not None:
                progress(state)
        cap = None
        if max_cost is not None:
            tokens_out, _ = output_estimate(client, template)
            cap = CostCap(
                limit=max_cost,
                prices=prices or Prices(),
                output_tokens=tokens_out,
                max_tokens=call_bound(client) or tokens_out,
            )
        still_waiting: list[str] = []
        if batch_api:
            stopped, failed, still_waiting = run_batch(
                todo,
                client=client,
                waiting=waiting,
                parse=parse,
                save=save,
                progress=state,
                mark_sent=mark_sent,
                set_batch=lambda batch, batch_id: judge_calls_set_batch(
                    judge=judge, tasks=batch, batch_id=batch_id
                ),
                unsend=lambda batch: judge_calls_unsend(judge=judge, tasks=batch),
                on_progress=progress,
                should_stop=stop_or_renew,
                poll_seconds=poll_seconds,
                cap=cap,
            )
            if not stopped and state.done < state.total:
                notes.append(
                    f"{state.total - state.done} request(s) the batch did not answer (expired or cancelled) "
                    "were not saved: run again to send them."
                )
            if still_waiting:
                notes.append(
                    f"{len(still_waiting)} batch(es) still running at the provider "
                    f"({', '.join(still_waiting)}): run again with --batch to fetch their answers."
                )
        else:
            stopped, failed = run_tasks(
                todo,
                client=client,
                concurrency=concurrency,
                parse=parse,
                save=save,
                progress=state,
                on_progress=progress,
                should_stop=stop_or_renew,
                mark_sent=mark_sent,
                unsend=lambda batch: judge_calls_unsend(judge=judge, tasks=batch),
                cap=cap,
            )
        if cap is not None and cap.reached and stopped:
            notes.append(
                f"The run stopped starting calls at the cost cap of {max_cost:g}: {cap.spent:.4f} was spent "
                f"(at the tokens the provider reported), and the next call would have passed the cap. The calls "
                f"paid for are saved; run again (with a higher cap) to continue."
            )
    finally:
        judge_run_release(judge, claim)
    failed = cached_failed + failed
    failures = [(task_label(o), o.error) for o in failed]
    outputs = [o.raw_output for o in failed if o.raw_output]
    return RunResult(
        judge=judge,
        note=" ".join([note, *notes, *client.notes]).strip(),
        progress=state,
        stopped=stopped,
        capped=cap is not None and cap.reached and stopped,
        waiting_batches=still_waiting,
        failures=failures,
        unknown=[task_label(t) for t in unknown],
        failed_outputs=outputs[:3],
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
    *,
    batch: Batch,
    template: JudgeTemplate,
    client: ChatClient,
    prices: Prices,
    cache: bool = True,
    max_cost: float | None = None,
    **plan,
) -> Estimate:
    """What a run would call, and its estimated tokens and cost: renders every prompt, calls nothing, saves
    nothing. Calls the cache would serve are counted apart. ``max_cost``: the estimate also gives the most
    the capped run can spend (and the client sends the cap's ``max_tokens``, as the run would).
    ``plan``: ``plan_run``'s options."""
    bound_for_cap(client, max_cost)
    tasks, _, _ = plan_run(batch=batch, template=template, client=client, **plan)
    tasks = [replace(t, key=request_key(client, t)) for t in tasks]
    hits = judge_calls_cached(keys=[t.key for t in tasks]) if cache else {}
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
