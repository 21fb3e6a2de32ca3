"""Score a batch with one judge template: bounded concurrency, every call saved the moment it completes.

The run renders every prompt first and refuses, before any call, when a variable cannot be filled.
It then calls only what this judge has not answered yet (``retry_failed`` adds the failed, unreadable
and ambiguous calls, ``retry_unknown`` the calls left ``sent`` by a killed run, ``force`` redoes
everything). Calls run in a thread pool with at most ``concurrency`` in flight; the main thread writes
each call's ledger row as ``sent`` before handing it to the pool and saves each result as it arrives.
Setting ``client.stop`` (Ctrl-C, SIGTERM, a cancelled job) stops new calls at once; calls already in
flight finish and are saved, calls waiting to retry give up and are left for the next run.

A run's options are one ``RunOptions`` (``annotator.judges.engine.options``), whichever entry point built
them; what it would call is planned in ``annotator.judges.engine.planning``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from uuid import UUID

from annotator.counted import counted
from annotator.judges.engine.batch_runner import run_batch
from annotator.judges.engine.budget import WAIT, CostCap, bound_for_cap, call_bound
from annotator.judges.engine.cache import request_key
from annotator.judges.engine.calls import Task
from annotator.judges.engine.client import ChatClient, JudgeCallError, JudgeRunFatal, RunStopped
from annotator.judges.engine.options import RunOptions
from annotator.judges.engine.outcomes import count_outcomes, outcome_of, served_from_cache

# batch_items and render_items are imported from here too: what a run calls is planned in ``planning``.
from annotator.judges.engine.planning import (  # noqa: F401
    batch_items,
    output_estimate,
    plan_run,
    render_items,
)
from annotator.judges.engine.progress import RunProgress
from annotator.judges.engine.templates import JudgeTemplate
from annotator.judges.selectors.cache import judge_calls_cached
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
from annotator.models import Batch, Item, Judge, JudgeCall

CACHE_SAVE_CHUNK = 250  # cached outcomes saved per transaction


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


def call_one(task: Task, client: ChatClient, parse: Callable[..., tuple]) -> CallOutcome:
    """One call and its parse (in a worker thread; no database)."""
    try:
        result = client.complete(task.messages)
    except JudgeCallError as exc:
        return outcome_of(task, exc, client=client, parse=parse)
    return outcome_of(task, result, client=client, parse=parse)


class _InFlight:
    """The calls handed to the thread pool: at most ``concurrency`` at once, none started past the cost cap."""

    def __init__(self, pool, tasks, *, client, parse, concurrency: int, cap: CostCap | None, mark_sent):
        self.pool, self.client, self.parse = pool, client, parse
        self.concurrency, self.cap, self.mark_sent = concurrency, cap, mark_sent
        self.queue, self.pending, self.task_of = iter(tasks), set(), {}
        self.held: list[Task] = []  # the next task, waiting for calls in flight to leave room under the cap
        self.fatal: JudgeRunFatal | None = None

    def refill(self) -> None:
        """Start calls until ``concurrency`` are in flight, the tasks run out, the run stops or the cap says wait."""
        batch = []
        while not self.client.stop.is_set() and len(self.pending) + len(batch) < self.concurrency:
            task = self.held.pop() if self.held else next(self.queue, None)
            if task is None:
                break
            if self.cap is not None:
                fits = self.cap.may_start(task)
                if not fits:
                    if fits is WAIT:
                        self.held.append(task)
                    break
            batch.append(task)
        if batch and self.mark_sent is not None:
            self.mark_sent(batch)
        for task in batch:
            future = self.pool.submit(call_one, task, self.client, self.parse)
            self.task_of[future] = task
            self.pending.add(future)

    def wait(self) -> set[Future]:
        """The calls that finished within a quarter second (the run looks at its stop flag that often)."""
        done, self.pending = wait(self.pending, timeout=0.25, return_when=FIRST_COMPLETED)
        return done

    def collect(self, done: set[Future]) -> tuple[list[CallOutcome], list[Task]]:
        """(the outcomes of ``done``, the tasks that ended with no answer: stopped, or the run cannot go on)."""
        arrived, unanswered = [], []
        for future in done:
            task = self.task_of.pop(future)
            try:
                outcome = future.result()
            except RunStopped:
                unanswered.append(task)
                continue
            except JudgeRunFatal as exc:
                self.fatal = self.fatal or exc
                self.client.stop.set()
                unanswered.append(task)
                continue
            finally:
                self._settle(task, future)
            arrived.append(outcome)
        return arrived, unanswered

    def _settle(self, task: Task, future: Future) -> None:
        """The cap counts a finished call at the tokens the provider reported; one with no answer was not paid."""
        if self.cap is None:
            return
        paid = future.exception() is None
        tokens = (future.result().tokens_in, future.result().tokens_out) if paid else (None, None)
        self.cap.finished(task, *tokens, paid=paid)


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
    stop, failed = client.stop, []
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        calls = _InFlight(
            pool, tasks, client=client, parse=parse, concurrency=concurrency, cap=cap, mark_sent=mark_sent
        )
        calls.refill()
        while calls.pending:
            try:
                done = calls.wait()
            except KeyboardInterrupt:  # no handler installed: stop new calls, keep what finishes
                stop.set()
                continue
            if should_stop is not None and not stop.is_set() and should_stop():
                stop.set()
            arrived, unanswered = calls.collect(done)
            # Refilled once the calls that arrived are paid: the cap then counts them at their real cost.
            calls.refill()
            if unanswered and unsend is not None:
                unsend(unanswered)
            if not arrived:
                continue
            save(arrived)
            failed += count_outcomes(progress, arrived)
            if on_progress is not None:
                on_progress(progress)
    if calls.fatal is not None:
        raise calls.fatal
    capped = cap is not None and cap.reached
    return (stop.is_set() or capped) and progress.done < progress.total, failed


@dataclass
class _Run:
    """One run of a judge holding its claim: the ledger writes its calls make, and its stop test."""

    judge: Judge
    template: JudgeTemplate
    client: ChatClient
    options: RunOptions
    parse: Callable[..., tuple]
    notes: list[str]
    on_progress: Callable[[RunProgress], None] | None
    should_stop: Callable[[], bool] | None
    claim: str
    renewed: float = field(default_factory=time.monotonic)

    def stop_or_renew(self) -> bool:
        """Whether to stop: asked to, or the claim could not be renewed (another run took the judge over)."""
        if time.monotonic() - self.renewed >= CLAIM_RENEW_SECONDS:
            if not judge_run_renew(self.judge, self.claim):
                self.notes.append(
                    "The run stopped: it stalled so long that another run took the judge over; "
                    "calls finished before are saved."
                )
                return True
            self.renewed = time.monotonic()
        return self.should_stop() if self.should_stop is not None else False

    def _ledger(self) -> dict:
        client = self.client
        return {
            "judge": self.judge,
            "template": self.template,
            "model": client.model,
            "params": client.params,
        }

    def save(self, outcomes: list[CallOutcome]) -> None:
        judge_calls_record(**self._ledger(), outcomes=outcomes, prices=self.options.prices)

    def save_many(self, outcomes: list[CallOutcome]) -> None:
        judge_calls_record_many(**self._ledger(), outcomes=outcomes, prices=self.options.prices)

    def mark_sent(self, tasks: list[Task]) -> None:
        judge_calls_mark_sent(**self._ledger(), tasks=tasks, request=self.client.request_params())

    def unsend(self, tasks: list[Task]) -> None:
        judge_calls_unsend(judge=self.judge, tasks=tasks)

    def set_batch(self, tasks: list[Task], batch_id: str) -> None:
        judge_calls_set_batch(judge=self.judge, tasks=tasks, batch_id=batch_id)


@dataclass
class _Calls:
    """A run's tasks sorted by what becomes of them."""

    todo: list[Task]  # called now
    unknown: list[Task]  # sent by a killed run, outcome unknown: left out
    waiting: dict[str, list[Task]]  # --batch: provider batch id → its tasks, submitted by an earlier run
    served: list[Task]  # answered from the response cache
    hits: dict[str, JudgeCall]  # the stored calls that answer them, by request key

    @property
    def total(self) -> int:
        return len(self.todo) + len(self.served) + sum(len(v) for v in self.waiting.values())


def judge_run(
    batch: Batch,
    template: JudgeTemplate,
    options: RunOptions | None = None,
    *,
    client: ChatClient,
    judge_name: str = "",
    progress: Callable[[RunProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    job_id: UUID | str | None = None,
    items: list[Item] | None = None,
    **option_fields,
) -> RunResult:
    """Score ``batch`` with ``template``, as ``options`` say (``RunOptions``; ``option_fields`` change some of
    them). Raises TemplateError (before any call) or JudgeRunFatal.

    ``client`` is built from the options' endpoint; the judge is named ``judge_name``, else the options'
    ``judge``, else TEMPLATE/MODEL. ``progress`` is told the counts as calls are saved; ``should_stop`` is
    asked between calls. ``job_id`` is the background job carrying the run out (none: the command line);
    the judge's claim records it. ``items``: a scoring run calls these, in this order, instead of the batch's
    (a stream's traces, whose order decides which are scored when the cost cap stops the run). With ``batch_api`` the calls go through the provider's batch API (see
    ``annotator.judges.engine.batch_runner``), which also fetches batches an earlier run left waiting.
    """
    options = RunOptions.with_fields(options, option_fields)
    bounded = bound_for_cap(client, options.max_cost)  # before the judge's identity: max_tokens is part of it
    tasks, parse, notes = plan_run(batch, template, client, options, items)
    notes += [bounded] if bounded else []
    judge, note = judge_for_run(
        name=judge_name or options.judge or f"{template.name}/{client.model}",
        model=client.model,
        template=template,
        params={**client.identity, "scale_warnings": template.scale_warnings},
    )
    # One run per judge at a time: none pays for an item another is calling.
    claim = judge_run_claim(judge, job_id=job_id)
    run = _Run(judge, template, client, options, parse, notes, progress, should_stop, claim)
    try:
        calls = _sort_calls(tasks, run)
        state = RunProgress(total=calls.total, skipped=len(tasks) - calls.total, prices=options.prices)
        failed = _serve_cached(calls, run, state)
        cap = _cost_cap(client, template, options)
        call = _call_batched if options.batch_api else _call_in_pool
        stopped, called_failed, still_waiting = call(calls, run, state, cap)
        capped = cap is not None and cap.reached and stopped
        notes += [_capped_note(cap, options.max_cost)] if capped else []
    finally:
        judge_run_release(judge, claim)
    failed += called_failed
    return RunResult(
        judge=judge,
        note=" ".join([note, *notes, *client.notes]).strip(),
        progress=state,
        stopped=stopped,
        capped=capped,
        waiting_batches=still_waiting,
        failures=[(task_label(o), o.error) for o in failed],
        unknown=[task_label(t) for t in calls.unknown],
        failed_outputs=[o.raw_output for o in failed if o.raw_output][:3],
    )


def _capped_note(cap: CostCap, max_cost: float) -> str:
    return (
        f"The run stopped starting calls at the cost cap of {max_cost:g}: {cap.spent:.4f} was "
        f"spent (at the tokens the provider reported), and the next call would have passed the cap. The "
        f"calls paid for are saved; run again (with a higher cap) to continue."
    )


def _sort_calls(tasks: list[Task], run: _Run) -> _Calls:
    """Which of ``tasks`` the run calls, leaves out (sent by a killed run), resumes from a provider's batch
    (with ``batch_api``) or serves from the response cache (with ``cache``)."""
    options, client, judge = run.options, run.client, run.judge
    todo, unknown = tasks_to_call(
        tasks,
        judge_call_states(judge=judge),
        retry_failed=options.retry_failed,
        force=options.force,
        retry_unknown=options.retry_unknown,
    )
    in_batches = judge_calls_in_batches(judge=judge) if options.batch_api else {}
    waiting: dict[str, list[Task]] = {}
    for task in [t for t in [*unknown, *todo] if _slot(t) in in_batches]:
        waiting.setdefault(in_batches[_slot(task)], []).append(replace(task, key=request_key(client, task)))
    unknown = [t for t in unknown if _slot(t) not in in_batches]
    todo = [replace(t, key=request_key(client, t)) for t in todo if _slot(t) not in in_batches]
    hits = judge_calls_cached(keys=[t.key for t in todo]) if options.cache else {}
    return _Calls(
        todo=[t for t in todo if t.key not in hits],
        unknown=unknown,
        waiting=waiting,
        served=[t for t in todo if t.key in hits],
        hits=hits,
    )


def _serve_cached(calls: _Calls, run: _Run, state: RunProgress) -> list[CallOutcome]:
    """Save the calls the cache answers, in chunks; returns those that gave no score."""
    failed = []
    for start in range(0, len(calls.served), CACHE_SAVE_CHUNK):
        outcomes = served_from_cache(
            calls.served[start : start + CACHE_SAVE_CHUNK],
            calls.hits,
            template_hash=run.template.content_hash,
            parse=run.parse,
        )
        run.save_many(outcomes)
        failed += count_outcomes(state, outcomes)
        if run.on_progress is not None:
            run.on_progress(state)
    return failed


def _cost_cap(client: ChatClient, template: JudgeTemplate, options: RunOptions) -> CostCap | None:
    """The cap on the run's estimated spend, when ``max_cost`` sets one."""
    if options.max_cost is None:
        return None
    tokens_out, _ = output_estimate(client, template)
    return CostCap(
        limit=options.max_cost,
        prices=options.prices,
        output_tokens=tokens_out,
        max_tokens=call_bound(client) or tokens_out,
    )


def _call_in_pool(
    calls: _Calls, run: _Run, state: RunProgress, cap: CostCap | None
) -> tuple[bool, list[CallOutcome], list[str]]:
    """One request per call, ``concurrency`` in flight. Returns (stopped early, failed outcomes, [])."""
    stopped, failed = run_tasks(
        calls.todo,
        client=run.client,
        concurrency=run.options.concurrency,
        parse=run.parse,
        save=run.save,
        progress=state,
        on_progress=run.on_progress,
        should_stop=run.stop_or_renew,
        mark_sent=run.mark_sent,
        unsend=run.unsend,
        cap=cap,
    )
    return stopped, failed, []


def _call_batched(
    calls: _Calls, run: _Run, state: RunProgress, cap: CostCap | None
) -> tuple[bool, list[CallOutcome], list[str]]:
    """The provider's batch API, with the batches an earlier run left waiting. Returns (stopped early, failed
    outcomes, the batches still running at the provider)."""
    stopped, failed, still_waiting = run_batch(
        calls.todo,
        client=run.client,
        waiting=calls.waiting,
        parse=run.parse,
        save=run.save,
        progress=state,
        mark_sent=run.mark_sent,
        set_batch=run.set_batch,
        unsend=run.unsend,
        on_progress=run.on_progress,
        should_stop=run.stop_or_renew,
        poll_seconds=run.options.poll_seconds,
        cap=cap,
    )
    if not stopped and state.done < state.total:
        run.notes.append(
            f"{counted(state.total - state.done, 'request', 'requests')} the batch did not answer (expired or cancelled) "
            "were not saved: run again to send them."
        )
    if still_waiting:
        run.notes.append(
            f"{len(still_waiting)} batch(es) still running at the provider "
            f"({', '.join(still_waiting)}): run again with --batch to fetch their answers."
        )
    return stopped, failed, still_waiting
