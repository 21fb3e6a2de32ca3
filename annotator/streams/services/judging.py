"""The judges a stream's worker runs on every trace, through the judges' own run path.

Each judge object of ``Stream.judge_runs`` is run by ``annotator.judges.engine.runner.judge_run``: the
shipped template verbatim, the response cache, a ledger row (``JudgeCall``) before each paid call, one
run per judge at a time. Sampled traces are scored as the items of the stream's batch (the report's
judge section compares them with people); the others as the items of the stream's closed judge batch.

Order: the sampled traces first (calibration needs them), then the rest in the order of
``sha256(salt + ":judge:" + trace_id)``, so that when the day's cap stops a run the traces scored that
day are a random sample of those waiting, not the earliest ones. The cap is per UTC day: a run may
spend ``max_cost_per_day`` less what the judge's calls on this stream cost since midnight (the ledger's
``cost``; cached calls cost 0). What is left waits for the next day.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from annotator.counted import counted
from annotator.judges.models.judge import VERSION_MARK
from annotator.models import Item, JudgeCall, JudgeScore, Stream, Trace, TraceScore
from annotator.streams.services.changes import changes_record

log = logging.getLogger(__name__)

# Traces one run of one judge takes on: the items it renders and the id lists it reads stay bounded;
# a longer backlog queues the next run at once.
RUN_CHUNK = 2000
BUSY_RETRY = dt.timedelta(minutes=2)  # another run holds the judge: try again after its claim would go stale
TOO_LARGE_SHOWN = 5  # trace ids of the too-large ones kept in the status


@dataclass
class JudgeDay:
    """What one run of one judge did, kept with the judge's settings as ``status`` (the API shows it)."""

    judge: str
    at: str
    day: str
    scored: int = 0  # traces that got the judge's scores in this run
    left: int = 0  # traces still waiting to be called
    unscored: int = (
        0  # traces whose call in this run gave no score (failed, unreadable, ambiguous): not called again
    )
    spent_today: float | None = None  # the judge's spend on this stream since midnight UTC, after the run
    cap: float | None = None
    capped: bool = False  # the day's cap stopped the run: the rest wait for the next day
    busy: bool = False  # another run held the judge: nothing was called
    # Traces whose one call alone could cost more than the day's cap: never called (not counted in left),
    # else the first of them in the run's order would end every day's run before anything was spent.
    too_large: int = 0
    too_large_ids: list[str] = field(default_factory=list)  # the first TOO_LARGE_SHOWN of them
    note: str = ""


def judges_run_all(*, stream_id: int, now: dt.datetime | None = None) -> list[JudgeDay]:
    """Run every judge of the stream on the traces it has not scored: the body of the worker's task
    (``annotator.streams.tasks.stream_judges_run``, which queues what is left). ``now``: the time whose
    UTC day the cap counts (tests pass a later day)."""
    # Cleared first: traces that arrive while this runs queue the next run.
    Stream.objects.filter(pk=stream_id).update(judges_run_queued=False)
    stream = Stream.objects.select_related("batch", "judge_batch").filter(pk=stream_id).first()
    if stream is None or not stream.judge_runs:
        return []
    now = now or timezone.now()
    days = [_run_one(stream, config, now) for config in stream.judge_runs]
    _status_save(stream, days)
    return days


def next_run_at(days: list[JudgeDay], now: dt.datetime) -> dt.datetime | None:
    """When to run the judges again: the next UTC midnight when a cap stopped one, soon when another
    run held a judge, now when a backlog is longer than one run; None when nothing waits to be called."""
    if any(d.capped and d.left for d in days):
        return _day_start(now) + dt.timedelta(days=1)
    if any(d.busy for d in days):
        return now + BUSY_RETRY
    if any(d.left and (d.scored or d.unscored) for d in days):
        return now
    return None


def _day_start(now: dt.datetime) -> dt.datetime:
    return now.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _order_key(salt: str, trace_id: str) -> bytes:
    return hashlib.sha256(f"{salt}:judge:{trace_id}".encode()).digest()


def _waiting(stream: Stream, name: str, settled: set[str]) -> list[tuple[int, str, bool, int | None]]:
    """(trace pk, trace_id, sampled, item pk) of the traces ``name`` has not scored and not called, in the
    run's order."""
    scored = TraceScore.objects.filter(stream=stream, judge=name).values("trace_id")
    rows = [
        row
        for row in Trace.objects.filter(stream=stream)
        .exclude(pk__in=scored)
        .values_list("pk", "trace_id", "sampled", "item_id")
        if row[1] not in settled
    ]
    rows.sort(key=lambda r: (not r[2], _order_key(stream.salt, r[1])))
    return rows


def _settled(stream: Stream, name: str) -> set[str]:
    """The trace_ids whose call by judge ``name`` gave no score (failed, unreadable, ambiguous, or sent by a
    run that was killed): the runner does not call them again, so they are not handed to it again either
    (else a growing heap of them would fill every run and starve the new traces)."""
    return set(
        JudgeCall.objects.filter(
            _judges_named(name), item__batch_id__in=_batches(stream), enhanced__isnull=True, sample=0
        )
        .exclude(status=JudgeCall.OK)
        .values_list("item__item_id", flat=True)
    )


def _batches(stream: Stream) -> list[int]:
    return [b for b in (stream.batch_id, stream.judge_batch_id) if b is not None]


def _items(stream: Stream, rows) -> list[tuple[tuple, Item]]:
    """(row, its item) for each of ``rows`` in order: a sampled trace's item in the stream's batch, another's
    in the judge batch (a row whose item was deleted is left out)."""
    by_pk = Item.objects.in_bulk([r[3] for r in rows if r[2] and r[3] is not None])
    others = [r[1] for r in rows if not r[2]]
    by_id = {}
    if others and stream.judge_batch_id is not None:
        by_id = {
            i.item_id: i for i in Item.objects.filter(batch_id=stream.judge_batch_id, item_id__in=others)
        }
    pairs = [(r, by_pk.get(r[3]) if r[2] else by_id.get(r[1])) for r in rows]
    return [(r, item) for r, item in pairs if item is not None]


def _judges_named(name: str) -> Q:
    """The judge ``name`` and its versions (``judge_for_run`` scores a changed configuration into one)."""
    return Q(judge__name=name) | Q(judge__name__startswith=name + VERSION_MARK)


def spent_today(stream: Stream, name: str, now: dt.datetime) -> float:
    """What judge ``name``'s calls on this stream's items cost since midnight UTC: every paid call in the
    ledger, superseded ones too (they were paid)."""
    batches = [b for b in (stream.batch_id, stream.judge_batch_id) if b is not None]
    total = (
        JudgeCall.ledger.filter(
            _judges_named(name), item__batch_id__in=batches, created_at__gte=_day_start(now)
        )
        .exclude(cached=True)
        .aggregate(total=Sum("cost"))["total"]
    )
    return float(total or 0.0)


def _options(config: dict, max_cost: float | None):
    from annotator.judges.engine.options import RunOptions
    from annotator.judges.engine.progress import Prices

    extra = {k: config[k] for k in ("temperature", "max_tokens", "concurrency") if k in config}
    return RunOptions(
        provider=config["provider"],
        base_url=config["base_url"] or None,
        model=config["model"],
        key_env=config["key_env"],
        judge=config["name"],
        prices=Prices(config["price_in"], config["price_out"], config["currency"]),
        max_cost=max_cost,
        **extra,
    )


def _client(config: dict, options):
    """A client with the key from the worker's environment; ValueError says why there is none."""
    from annotator.judges.providers import client_for, provider_named

    if options.key_env not in settings.ANNOTATOR_JUDGE_KEY_ENVS:
        raise ValueError(f"{options.key_env} is not one of the API key variables this server allows")
    api_key = os.environ.get(options.key_env, "")
    if not api_key and provider_named(options.provider).needs_key(options.base_url or ""):
        raise ValueError(
            f"the API key variable {options.key_env} is not set on the worker; nothing was called"
        )
    return client_for(options.client_params(), api_key=api_key)


def _run_one(stream: Stream, config: dict, now: dt.datetime) -> JudgeDay:
    from annotator.judges.engine.client import JudgeRunFatal
    from annotator.judges.engine.runner import judge_run
    from annotator.judges.engine.templates import TemplateError, load_template
    from annotator.judges.services.runs import JudgeBusy
    from annotator.uploads.files.errors import ImportRefused

    name, cap = config["name"], config.get("max_cost_per_day")
    day = JudgeDay(judge=name, at=now.isoformat(), day=_day_start(now).date().isoformat(), cap=cap)
    waiting = _waiting(stream, name, _settled(stream, name))
    chunk = waiting[:RUN_CHUNK]
    spent = spent_today(stream, name, now)
    day.left, day.spent_today = len(waiting), spent
    if not chunk:
        return day
    if cap is not None and spent >= cap:
        day.capped = True
        day.note = _cap_note(day, config)
        return day
    options = _options(config, None if cap is None else cap - spent)
    pairs, result, notes = _items(stream, chunk), None, []
    try:
        client = _client(config, options)
    except ValueError as exc:
        day.note = str(exc)
        return day
    try:
        template = load_template(config["template"])
        if cap is not None:
            chunk, pairs, too_large = _fitting_chunk(stream, waiting, template, options, client, cap)
            notes += [_too_large_note(day, too_large, cap, config)] if too_large else []
        if pairs:
            result = judge_run(stream.batch, template, options, client=client, items=[i for _, i in pairs])
    except JudgeBusy as exc:
        day.busy, notes = True, [*notes, str(exc)]
    except (TemplateError, ImportRefused, JudgeRunFatal) as exc:
        notes.append(f"{exc} Calls finished before it are saved; the next run continues.")
    finally:
        client.close()
    day.left = len(waiting) - day.too_large
    if result is not None:
        scored = scores_to_traces(stream, name, result.judge, pairs)
        settled = _settled(stream, name)
        done = [r for r in chunk if r[0] in scored or r[1] in settled]
        day.scored, day.capped = len(scored), result.capped
        day.unscored = sum(1 for r in chunk if r[0] not in scored and r[1] in settled)
        day.left = len(waiting) - len(done) - day.too_large
        day.spent_today = spent_today(stream, name, now)
        notes.append(_cap_note(day, config) if result.capped else result.note)
    day.note = " ".join(n for n in notes if n)
    return day


def _fitting_chunk(stream: Stream, waiting: list, template, options, client, cap: float):
    """(the rows looked at, up to RUN_CHUNK (row, item) pairs whose call fits the cap, the too-large ones):
    chunk after chunk of ``waiting`` until a run's worth fits, so that a heap of too-large traces at the
    head of the order cannot take every run's place."""
    rows, pairs, too_large = [], [], []
    for start in range(0, len(waiting), RUN_CHUNK):
        chunk = waiting[start : start + RUN_CHUNK]
        fits, big = _fitting(stream, template, options, client, cap, _items(stream, chunk))
        rows, pairs, too_large = rows + chunk, pairs + fits, too_large + big
        if len(pairs) >= RUN_CHUNK:
            break
    return rows, pairs[:RUN_CHUNK], too_large


def _fitting(stream: Stream, template, options, client, cap: float, pairs: list) -> tuple[list, list]:
    """(the pairs whose call can fit the day's cap, [(trace_id, reservation)] of those whose call cannot).

    A call fits when its reservation fits: its estimated input and ``max_tokens`` output tokens, as
    ``CostCap`` reserves a call in flight (``annotator.judges.engine.budget``). One that does not would be
    refused by the cap on every day with nothing spent, and, first in the fixed order, end every run."""
    from annotator.judges.engine.budget import CAP_MAX_TOKENS, call_bound, input_tokens
    from annotator.judges.engine.planning import render_items

    # The run sends CAP_MAX_TOKENS with every call of a capped run that names none (bound_for_cap).
    max_tokens = call_bound(client) or CAP_MAX_TOKENS
    tasks = render_items([item for _, item in pairs], template, stream.batch.rubric_obj)
    fits, too_large = [], []
    for pair, task in zip(pairs, tasks, strict=True):
        reserve = options.prices.cost_of(input_tokens(task.messages), max_tokens)
        if reserve > cap:
            too_large.append((pair[0][1], reserve, max_tokens))
        else:
            fits.append(pair)
    return fits, too_large


def _too_large_note(day: JudgeDay, too_large: list, cap: float, config: dict) -> str:
    day.too_large = len(too_large)
    day.too_large_ids = [trace_id for trace_id, _, _ in too_large[:TOO_LARGE_SHOWN]]
    trace_id, reserve, max_tokens = too_large[0]
    currency = config["currency"]
    return (
        f"{counted(len(too_large), 'trace is', 'traces are')} too large for the cap and not called: trace "
        f"{trace_id}'s call \u2248 {reserve:.4f} {currency} (its input and max_tokens {max_tokens} output "
        f"tokens) > the day's cap of {cap:g} {currency}. The other traces go on."
    )


def _cap_note(day: JudgeDay, config: dict) -> str:
    return (
        f"The cap of {day.cap:g} {config['currency']} for {day.day} (UTC) is reached: "
        f"{day.spent_today:.4f} {config['currency']} was spent and the next call's estimate would pass "
        f"the cap {CAP_CLAUSE}; {counted(day.left, 'trace waits', 'traces wait')} for the next day."
    )


# Why a run stops below its cap, in one clause (the stream page says it too).
CAP_CLAUSE = (
    "(a call in flight also holds a reservation of its input and max_tokens output tokens until paid)"
)


def scores_to_traces(stream: Stream, name: str, judge, pairs: list[tuple[tuple, Item]]) -> set[int]:
    """Copy ``judge``'s scores of the items of ``pairs`` ((trace row, item)) to the traces' ``TraceScore`` under the stream's
    judge ``name`` (the value is already on the rubric's scale), and mark the changed trace time for the
    series (the task refreshes it). Returns the pks of the traces that got scores."""
    item_of = {item.pk: row for row, item in pairs}
    dimensions = set(stream.batch.rubric_obj.dimension_keys)
    scores = JudgeScore.objects.filter(judge=judge, item_id__in=list(item_of), dimension__in=dimensions)
    times = dict(Trace.objects.filter(pk__in=[r[0] for r in item_of.values()]).values_list("pk", "timestamp"))
    new = [
        TraceScore(
            stream=stream,
            trace_id=item_of[item_pk][0],
            timestamp=times[item_of[item_pk][0]],
            judge=name,
            dimension=dimension,
            value=value,
        )
        for item_pk, dimension, value in scores.values_list("item_id", "dimension", "value")
    ]
    if not new:
        return set()
    with transaction.atomic():
        TraceScore.objects.bulk_create(new, ignore_conflicts=True, batch_size=2000)
        changes_record(stream, sorted({s.timestamp for s in new}))
    return {s.trace_id for s in new}


def _status_save(stream: Stream, days: list[JudgeDay]) -> None:
    """Keep each judge's last run with its settings, so the API (and the stream's readers) see a capped day."""
    by_name = {d.judge: asdict(d) for d in days}
    with transaction.atomic():
        row = Stream.objects.select_for_update().filter(pk=stream.pk).first()
        if row is None:
            return
        runs = [{**r, "status": by_name[r["name"]]} if r["name"] in by_name else r for r in row.judge_runs]
        Stream.objects.filter(pk=stream.pk).update(judge_runs=runs)


def pushed_scores_save(*, stream: Stream, scores: list[tuple[int, str, str, float]], now) -> None:
    """Pushed scores of sampled traces, ``(item pk, judge, dimension, value)``, also as the judges' scores of
    the items of the stream's batch: the report's judge section and the judge card read those. The values
    are on the rubric's scale already. Call inside the ingest's transaction."""
    if not scores:
        return
    from annotator.judges.services.judges import judge_get_or_create, judge_scores_save

    rubric = stream.batch.rubric_obj
    for name in sorted({judge for _, judge, _, _ in scores}):
        judge = judge_get_or_create(name=name)
        rows = [
            JudgeScore(
                judge=judge,
                item_id=item,
                dimension=dimension,
                raw_value=value,
                scale_min=rubric.scale_min,
                scale_max=rubric.scale_max,
                higher_is_better=True,
                value=value,
                imported_at=now,
            )
            for item, j, dimension, value in scores
            if j == name
        ]
        judge_scores_save(judge=judge, scores=rows)
