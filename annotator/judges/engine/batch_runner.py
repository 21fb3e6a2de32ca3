"""``--batch``: the calls go through the provider's batch API instead of one request each.

Every request's ledger row is written ``sent`` before the batch is submitted and then carries the batch's id,
so the ledger is the resume state: a run stopped while the provider works (Ctrl-C, a crash) is picked up by the
next ``--batch`` run, which polls the same batch and stores its answers as calls. Requests the batch did not
answer (expired, cancelled) lose their ``sent`` row, so a rerun sends them again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from annotator.judges.engine.budget import CostCap
from annotator.judges.engine.calls import Task
from annotator.judges.engine.client import ChatClient, JudgeCallError, JudgeRunFatal
from annotator.judges.engine.outcomes import count_outcomes, outcome_of
from annotator.judges.engine.progress import RunProgress
from annotator.judges.providers import batches_for
from annotator.judges.providers.batches import ENDED
from annotator.judges.services.runs import CallOutcome


def custom_id(task: Task) -> str:
    return f"{task.item.pk}-{task.enhanced.pk if task.enhanced else 0}-{task.sample}"


def _answered(
    task: Task, client: ChatClient, answer, parse: Callable[..., tuple], batch_id: str
) -> CallOutcome:
    """The outcome of ``task`` from the batch's ``answer`` (read as one call's answer)."""
    try:
        result = client.answer_from(answer.status, answer.body)
    except JudgeCallError as exc:
        return outcome_of(task, exc, client=client, parse=parse, provider_batch=batch_id)
    return outcome_of(task, result, client=client, parse=parse, provider_batch=batch_id)


def run_batch(
    todo: list[Task],
    *,
    client: ChatClient,
    waiting: dict[str, list[Task]],
    parse: Callable[..., tuple],
    save: Callable[[list[CallOutcome]], None],
    progress: RunProgress,
    mark_sent: Callable[[list[Task]], None],
    set_batch: Callable[[list[Task], str], None],
    unsend: Callable[[list[Task]], None],
    on_progress: Callable[[RunProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    poll_seconds: float = 30.0,
    cap: CostCap | None = None,
) -> tuple[bool, list[CallOutcome], list[str]]:
    """Submit ``todo`` as one batch, then poll it and the batches in ``waiting`` (id → their tasks, from an earlier
    run) until all ended or the run is stopped. Returns (stopped early, the failed outcomes, batch ids still
    running at the provider). Raises JudgeRunFatal when the batch cannot be submitted (nothing is left sent)."""
    api, stop, failed = batches_for(client), client.stop, []
    waiting = dict(waiting)
    if cap is not None:
        # In order, up to the first that does not fit: no answer comes back before the batch is submitted,
        # so a call that must wait for others never starts in this run.
        fits = list(itertools.takewhile(cap.may_start, todo))
        cap.reached = cap.reached or len(fits) < len(todo)
        todo = fits
    waiting.update(
        _submit(todo, api=api, client=client, mark_sent=mark_sent, set_batch=set_batch, unsend=unsend)
    )
    while waiting and not stop.is_set():
        for batch_id in list(waiting):
            if api.state(batch_id) != ENDED:
                continue
            answers = api.answers(batch_id)
            tasks = waiting.pop(batch_id)
            outcomes = []
            for task in tasks:
                if custom_id(task) in answers:
                    outcomes.append(_answered(task, client, answers[custom_id(task)], parse, batch_id))
                    if cap is not None:
                        cap.finished(task, outcomes[-1].tokens_in, outcomes[-1].tokens_out)
            unanswered = [t for t in tasks if custom_id(t) not in answers]
            if unanswered:
                unsend(unanswered)
            save(outcomes)
            failed += count_outcomes(progress, outcomes)
            if on_progress is not None:
                on_progress(progress)
        if should_stop is not None and should_stop():
            stop.set()
        if waiting:
            stop.wait(poll_seconds)
    capped = cap is not None and cap.reached
    return (stop.is_set() or capped) and progress.done < progress.total, failed, sorted(waiting)


def _submit(todo, *, api, client: ChatClient, mark_sent, set_batch, unsend) -> dict[str, list[Task]]:
    """Submit ``todo`` in batches of at most the provider's limit; batch id → its tasks. Raises JudgeRunFatal
    when one cannot be submitted (its tasks are no longer sent; the batches before it wait at the provider)."""
    stop = client.stop
    # One batch holds at most the provider's limit of requests: more are sent as several batches.
    size, submitted = api.max_requests, {}
    for start in range(0, len(todo), size):
        if stop.is_set():
            break
        part = todo[start : start + size]
        mark_sent(part)
        try:
            batch_id = api.submit({custom_id(t): client.request_body(t.messages) for t in part})
        except (JudgeCallError, JudgeRunFatal) as exc:
            unsend(part)
            before = (
                f" The {len(submitted)} batch(es) submitted before it ({', '.join(submitted)}) wait at the "
                "provider: run again with --batch to fetch their answers and send the rest."
                if submitted
                else ""
            )
            raise JudgeRunFatal(f"the batch could not be submitted: {exc}.{before}") from None
        set_batch(part, batch_id)
        submitted[batch_id] = part
    return submitted
