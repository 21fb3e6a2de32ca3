"""Writes of ``run_judge``: which judge version a run scores into, and each call saved as it completes."""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotator.judges.engine.templates import TemplateError
from annotator.judges.models.judge import VERSION_MARK
from annotator.judges.services.judges import NAME_MAX_LENGTH, judge_get_or_create
from annotator.models import (
    Item,
    Job,
    Judge,
    JudgeCall,
    JudgeCriterionScore,
    JudgeFailure,
    JudgeScore,
    PairwiseVerdict,
)
from annotator.selectors.jobs import this_worker


@dataclass
class CallOutcome:
    """What one call produced, built in a worker thread and saved by ``judge_calls_record``."""

    item: Item
    enhanced: Item | None
    status: str
    prompt: list[dict[str, str]]
    sample: int = 0
    swapped: bool = False  # a pair sent with the enhanced system's response first
    raw_output: str = ""
    parsed: dict[str, Any] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (dimension or "", error)
    http_status: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency: float = 0.0
    attempts: int = 1
    sent: dict[str, Any] | None = None  # the sampling parameters the answered request carried
    output_mode: str = ""
    distributions: dict[str, Any] = field(default_factory=dict)  # dimension → ScoreDistribution
    request_key: str = ""
    cached: bool = False  # served from an identical earlier call: nothing was paid
    request: dict[str, Any] = field(default_factory=dict)  # every parameter the request carried
    provider_batch: str = ""  # --batch: the provider's batch the answer came from

    @property
    def error(self) -> str:
        return "; ".join(f"[{d}] {e}" if d else e for d, e in self.problems)


def version_name(name: str, version: str, key: str) -> str:
    suffix = f"{VERSION_MARK}{version or 'unversioned'} #{key[:8]})"
    return name[: NAME_MAX_LENGTH - len(suffix)] + suffix


def _identity(params: dict, *, base_url: bool = True) -> dict:
    """The parameters that make a judge what it is (not the template's scale warnings, which follow from its text).

    ``base_url=False`` compares with a judge saved before the base URL was part of its identity.
    """
    return {k: v for k, v in params.items() if k != "scale_warnings" and (base_url or k != "base_url")}


def version_key(template, model: str, params: dict) -> str:
    """sha256 of everything a judge version is: template text and version, model, parameters."""
    blob = json.dumps(
        [template.content_hash, template.version, model, _identity(params)], sort_keys=True, default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _changes(judge: Judge, template, model: str, params: dict) -> list[str]:
    changes = []
    if judge.template_hash != template.content_hash or judge.template_version != template.version:
        changes.append(f"other template text (version {judge.template_version or 'unversioned'} before)")
    if judge.model != model:
        changes.append(f"another model ({judge.model or 'none'} before, {model} now)")
    known = "base_url" in judge.params
    if known and judge.params["base_url"] != params.get("base_url"):
        changes.append(f"another endpoint ({judge.params['base_url']} before, {params.get('base_url')} now)")
    if _identity(judge.params, base_url=False) != _identity(params, base_url=False):
        changes.append(
            f"other parameters ({json.dumps(_identity(judge.params), sort_keys=True)} before, "
            f"{json.dumps(_identity(params), sort_keys=True)} now)"
        )
    return changes


@transaction.atomic
def judge_for_run(*, name: str, model: str, template, params: dict) -> tuple[Judge, str]:
    """The judge a run scores into, and a note when it is not the one named.

    A judge keeps the template text, model, endpoint (``params["base_url"]``) and parameters it was first
    run with: when any of them changed, the run goes to a new judge version named after a hash of all of
    them, so scores of two configurations are never mixed under one name (the judge card lists the
    versions side by side). A judge first run before its endpoint was recorded adopts this run's, and
    the note says so.
    """
    name = name.strip()
    judge = Judge.objects.filter(name=name).first()
    note = ""
    changes = _changes(judge, template, model, params) if judge is not None and judge.template_hash else []
    if (
        judge is not None
        and judge.template_hash
        and not changes
        and "base_url" not in judge.params
        and params.get("base_url")
    ):
        judge.params = {**judge.params, "base_url": params["base_url"]}
        judge.save(update_fields=["params"])
        note = (
            f"\u201c{name}\u201d was first run before endpoints were recorded: its endpoint is now recorded as "
            f"{params['base_url']}, and a run against another endpoint will score into a new judge version."
        )
    if changes:
        versioned = version_name(name, template.version, version_key(template, model, params))
        note = (
            f"\u201c{name}\u201d was run with {'; '.join(changes)}: this run scores into the judge version "
            f"\u201c{versioned}\u201d, never mixed with the other."
        )
        name = versioned
    judge = judge_get_or_create(
        name=name, model=model, template=template.name, template_version=template.version
    )
    if not judge.template_hash:
        judge.template_hash, judge.params = template.content_hash, params
        judge.save(update_fields=["template_hash", "params"])
    return judge, note


CLAIM_STALE_AFTER = timedelta(minutes=2)  # a run renews its claim every CLAIM_RENEW_SECONDS while it runs
CLAIM_RENEW_SECONDS = 20.0
_FREED = {"run_claim": "", "run_claimed_at": None, "run_claim_worker": "", "run_claim_job": None}


class JudgeBusy(TemplateError):
    """Another run of the same judge is going on: refused before any call, so no item is paid for twice."""


def judge_run_claim(judge: Judge, *, job_id: UUID | str | None = None) -> str:
    """Claim ``judge`` for one run; returns the claim's token. ``job_id``: the job this run carries out (none:
    run_judge on the command line). Raises JudgeBusy, naming the holder, while another run holds it (a
    claim not renewed for CLAIM_STALE_AFTER is taken over: its process stopped without releasing it)."""
    token = secrets.token_hex(16)
    holder = {"run_claim_worker": this_worker(), "run_claim_job": UUID(str(job_id)) if job_id else None}
    # Twice: the holder may release the claim between the refused update and the read that names it.
    for _ in range(2):
        now = timezone.now()
        free = (
            Q(run_claim="") | Q(run_claimed_at__lt=now - CLAIM_STALE_AFTER) | Q(run_claimed_at__isnull=True)
        )
        if Judge.objects.filter(free, pk=judge.pk).update(run_claim=token, run_claimed_at=now, **holder):
            return token
        held = (
            Judge.objects.filter(pk=judge.pk)
            .exclude(run_claim="")
            .values("run_claimed_at", "run_claim_worker", "run_claim_job")
            .first()
        )
        if held is not None:
            raise JudgeBusy(_busy_message(judge, held, job_id=holder["run_claim_job"], now=now))
    raise JudgeBusy(
        f"judge \u201c{judge.name}\u201d is claimed and released by other runs as fast as this one asks: "
        "run again in a moment; a rerun calls only what is still missing."
    )


def _busy_message(judge: Judge, held: dict, *, job_id: UUID | None, now) -> str:
    """Who holds the claim, until when it counts as live, and what to do: a sentence a person can act on."""
    worker, holder_job = held["run_claim_worker"], held["run_claim_job"]
    process = f" (process {worker})" if worker else ""
    if holder_job is not None and holder_job == job_id:
        who = f"an earlier attempt of this job{process}"
        advice = "This attempt called nothing: try again once that claim counts as stopped."
    elif holder_job is not None:
        label = Job.objects.filter(pk=holder_job).values_list("label", flat=True).first()
        who = f"the judge-run job \u201c{label}\u201d{process}" if label else f"a judge-run job{process}"
        advice = "Wait for it to finish, or stop it on its job page, then run again."
    elif worker:
        who = f"run_judge on the command line{process}"
        advice = "Wait for it to finish, or stop it (Ctrl-C in its terminal), then run again."
    else:  # a claim taken before holders were recorded
        who = "a run that did not record its process"
        advice = "Wait for it to finish, or stop it, then run again."
    since = held["run_claimed_at"]
    if since is None:
        when = ""
    else:
        stale = since + CLAIM_STALE_AFTER
        wait = max(0, int((stale - now).total_seconds()) + 1)
        when = (
            f" Its claim was last renewed at {since:%Y-%m-%d %H:%M:%S} UTC; unless renewed, it counts as stopped "
            f"from {stale:%H:%M:%S} UTC (in {wait} s), and a rerun then takes the judge over."
        )
    return (
        f"judge \u201c{judge.name}\u201d is being run by another process: {who}.{when} {advice} "
        "A rerun calls only what is still missing."
    )


def judge_run_renew(judge: Judge, token: str) -> bool:
    """Renew the run's claim; False when it was lost (this run stalled past CLAIM_STALE_AFTER and
    another took the judge over): the caller must then stop calling."""
    return bool(Judge.objects.filter(pk=judge.pk, run_claim=token).update(run_claimed_at=timezone.now()))


def judge_run_release(judge: Judge, token: str) -> None:
    Judge.objects.filter(pk=judge.pk, run_claim=token).update(**_FREED)


def judge_claims_release_for_job(*, job: Job) -> int:
    """Free the claims ``job`` still holds once its worker is known dead (``job_reclaim``), so Try again
    resumes at once instead of waiting CLAIM_STALE_AFTER. Only the claim of that job's own worker goes:
    an attempt running elsewhere keeps its claim."""
    return (
        Judge.objects.filter(run_claim_job=job.pk, run_claim_worker=job.worker)
        .exclude(run_claim="")
        .update(**_FREED)
    )


def _clear(calls) -> None:
    """Make room for new calls: the paid calls in ``calls`` (answered or failed, not served from the cache)
    are kept as ``superseded``, so the ledger keeps every call paid for; the rest (``sent`` placeholders,
    cached calls, which cost nothing) are deleted."""
    calls.filter(cached=False).exclude(status=JudgeCall.SENT).update(superseded=True)
    calls.delete()  # a new query: the rows just superseded are no longer current


@transaction.atomic
def judge_calls_mark_sent(
    *, judge: Judge, template, model: str, params: dict, tasks: list, request: dict | None = None
) -> None:
    """Write each task's ledger row as ``sent`` before its request leaves, so a run killed mid-call leaves
    a trace a rerun will not pay for again unasked. The item's scores stay until the answer replaces them.
    ``request``: the parameters the requests carry (besides model and messages)."""
    now = timezone.now()
    for task in tasks:
        _clear(
            JudgeCall.objects.filter(judge=judge, item=task.item, enhanced=task.enhanced, sample=task.sample)
        )
    JudgeCall.objects.bulk_create(
        JudgeCall(
            judge=judge,
            item=task.item,
            enhanced=task.enhanced,
            sample=task.sample,
            status=JudgeCall.SENT,
            template_name=template.name,
            template_version=template.version,
            template_hash=template.content_hash,
            model=model,
            params=params,
            prompt=task.messages,
            attempts=0,
            created_at=now,
            request_key=task.key,
            request=request or {},
        )
        for task in tasks
    )


@transaction.atomic
def judge_calls_unsend(*, judge: Judge, tasks: list) -> None:
    """Remove the ``sent`` rows of calls that never got an answer because the run stopped or could not go on
    (a call waiting to retry, a refused key): nothing was paid for, and a plain rerun calls them. A paid call
    the ``sent`` row superseded (``--force``) becomes the slot's call again."""
    for task in tasks:
        slot = {"judge": judge, "item": task.item, "enhanced": task.enhanced, "sample": task.sample}
        if JudgeCall.objects.filter(**slot, status=JudgeCall.SENT).delete()[0]:
            # The call that was to replace the slot's last paid call never happened: that call is current again.
            last = JudgeCall.ledger.filter(**slot, superseded=True).order_by("-created_at", "-pk").first()
            if last is not None:
                JudgeCall.ledger.filter(pk=last.pk).update(superseded=False)


@transaction.atomic
def judge_calls_set_batch(*, judge: Judge, tasks: list, batch_id: str) -> None:
    """Record on the ``sent`` rows of ``tasks`` the provider batch they wait in: the resume state of --batch."""
    for task in tasks:
        JudgeCall.objects.filter(
            judge=judge, item=task.item, enhanced=task.enhanced, sample=task.sample, status=JudgeCall.SENT
        ).update(provider_batch=batch_id)


def judge_calls_in_batches(*, judge: Judge) -> dict[tuple[int, int | None, int], str]:
    """(item pk, enhanced pk or None, sample) → provider batch id of this judge's calls still waiting in a batch."""
    return {
        (i, e, n): b
        for i, e, n, b in JudgeCall.objects.filter(judge=judge, status=JudgeCall.SENT)
        .exclude(provider_batch="")
        .values_list("item_id", "enhanced_id", "sample", "provider_batch")
    }


def judge_call_states(*, judge: Judge) -> dict[tuple[int, int | None, int], str]:
    """(item pk, enhanced pk or None, sample) → status of every call this judge has saved."""
    return {
        (i, e, n): s
        for i, e, n, s in JudgeCall.objects.filter(judge=judge).values_list(
            "item_id", "enhanced_id", "sample", "status"
        )
    }


@transaction.atomic
def judge_calls_record(
    *, judge: Judge, template, model: str, params: dict, outcomes: list[CallOutcome], prices=None
) -> None:
    """Save completed calls (those that arrived together) in one transaction; see ``_record``. ``prices``
    (``annotator.judges.engine.progress.Prices``): the run's, each call's ``cost`` is priced with them."""
    for outcome in outcomes:
        _record(judge, template, model, params, outcome, prices)


@transaction.atomic
def judge_calls_record_many(
    *, judge: Judge, template, model: str, params: dict, outcomes: list[CallOutcome], prices=None
) -> None:
    """Save many outcomes at once (those served from the cache): as ``judge_calls_record``, with one delete and
    one insert per table for the single-response calls instead of several statements per call."""
    single = [o for o in outcomes if o.enhanced is None]
    for outcome in outcomes:
        if outcome.enhanced is not None:
            _record(judge, template, model, params, outcome, prices)
    if not single:
        return
    now, scale = timezone.now(), template.scale
    for sample in {o.sample for o in single}:
        _clear(
            JudgeCall.objects.filter(
                judge=judge,
                enhanced__isnull=True,
                sample=sample,
                item__in=[o.item.pk for o in single if o.sample == sample],
            )
        )
    JudgeCall.objects.bulk_create(_call_row(judge, template, model, params, o, now, prices) for o in single)
    scored = [o for o in single if not o.sample and o.parsed.get("scores")]
    JudgeScore.objects.filter(judge=judge, item__in=[o.item.pk for o in scored]).delete()
    JudgeScore.objects.bulk_create(row for o in scored for row in _score_rows(judge, scale, o, now))
    kept = [o for o in single if not o.sample]
    JudgeFailure.objects.filter(judge=judge, item__in=[o.item.pk for o in kept]).delete()
    JudgeFailure.objects.bulk_create(
        JudgeFailure(judge=judge, item=o.item, dimension=d, error=e, raw_output=o.raw_output, created_at=now)
        for o in kept
        for d, e in o.problems
    )


def call_cost(o: CallOutcome, prices) -> float | None:
    """What a call was charged: nothing when served from the cache (its tokens were not paid again), else its
    reported tokens at ``prices``; None when the run had no prices."""
    if prices is None or not prices.known:
        return None
    return 0.0 if o.cached else prices.cost_of(o.tokens_in, o.tokens_out)


def _call_row(
    judge: Judge, template, model: str, params: dict, o: CallOutcome, now, prices=None
) -> JudgeCall:
    """The ledger row of a completed call (unsaved): one spelling for the single and the bulk save."""
    cost = call_cost(o, prices)
    return JudgeCall(
        judge=judge,
        item=o.item,
        enhanced=o.enhanced,
        sample=o.sample,
        status=o.status,
        template_name=template.name,
        template_version=template.version,
        template_hash=template.content_hash,
        model=model,
        params=params if o.sent is None else o.sent,
        prompt=o.prompt,
        raw_output=o.raw_output,
        parsed=o.parsed,
        error=o.error,
        http_status=o.http_status,
        tokens_in=o.tokens_in,
        tokens_out=o.tokens_out,
        latency_ms=round(o.latency * 1000),
        attempts=o.attempts,
        output_mode=o.output_mode,
        created_at=now,
        request_key=o.request_key,
        cached=o.cached,
        request=o.request,
        provider_batch=o.provider_batch,
        cost=cost,
        currency=prices.currency if cost is not None else "",
    )


def _score_rows(judge: Judge, scale, o: CallOutcome, now) -> list[JudgeScore]:
    """The judge's scores from one call's parsed answer (unsaved), one per dimension."""
    return [
        JudgeScore(
            judge=judge,
            item=o.item,
            dimension=dimension,
            raw_value=s["raw"],
            scale_min=scale.min,
            scale_max=scale.max,
            higher_is_better=scale.higher_is_better,
            value=s["value"],
            reason=s["reason"],
            raw_output=o.raw_output,
            imported_at=now,
            weighted_value=s.get("distribution", {}).get("weighted_value"),
            confidence=s.get("distribution", {}).get("confidence"),
        )
        for dimension, s in o.parsed.get("scores", {}).items()
    ]


def _record(judge: Judge, template, model: str, params: dict, outcome: CallOutcome, prices=None) -> JudgeCall:
    """Save one completed call with its scores (replacing the item's earlier ones) or its failure.

    The item's earlier failure rows go when it is scored; a failed call keeps one failure row per
    problem with the raw output, so nothing the endpoint answered is lost.
    """
    scale = template.scale
    now = timezone.now()
    _clear(
        JudgeCall.objects.filter(
            judge=judge, item=outcome.item, enhanced=outcome.enhanced, sample=outcome.sample
        )
    )
    call = _call_row(judge, template, model, params, outcome, now, prices)
    call.save(force_insert=True)
    if outcome.sample:
        return call  # a repeat for self-consistency: its parsed values stay on the call, the judge's scores are sample 0's
    if outcome.enhanced is None:
        scores = outcome.parsed.get("scores", {})
        if scores:
            JudgeScore.objects.filter(judge=judge, item=outcome.item, dimension__in=list(scores)).delete()
            JudgeScore.objects.bulk_create(_score_rows(judge, scale, outcome, now))
    else:
        _record_pair(judge, template, outcome, now)
    JudgeFailure.objects.filter(judge=judge, item=outcome.item).delete()
    JudgeFailure.objects.bulk_create(
        JudgeFailure(
            judge=judge,
            item=outcome.item,
            dimension=d,
            error=e,
            raw_output=outcome.raw_output,
            created_at=now,
        )
        for d, e in outcome.problems
    )
    return call


def _record_pair(judge: Judge, template, outcome: CallOutcome, now) -> None:
    """A pairwise call's verdict and criterion scores, replacing the pair's earlier ones."""
    pair = {"judge": judge, "baseline": outcome.item, "enhanced": outcome.enhanced}
    PairwiseVerdict.objects.filter(**pair).delete()
    JudgeCriterionScore.objects.filter(judge=judge, item=outcome.item, enhanced=outcome.enhanced).delete()
    verdict = outcome.parsed.get("verdict")
    # A call with a problem (a criterion out of range) is unreadable as a whole: its verdict is not counted.
    if verdict and outcome.status == JudgeCall.OK:
        PairwiseVerdict.objects.create(
            **pair, **verdict, swapped=outcome.swapped, raw_output=outcome.raw_output, imported_at=now
        )
    scale = template.scale
    JudgeCriterionScore.objects.bulk_create(
        JudgeCriterionScore(
            judge=judge,
            item=outcome.item,
            enhanced=outcome.enhanced,
            criterion=name,
            rubric_dimension=c["rubric_dimension"],
            raw_value=c["raw"],
            scale_min=scale.min,
            scale_max=scale.max,
            higher_is_better=scale.higher_is_better,
            reason=c["reason"],
            evidence=c["evidence"],
            created_at=now,
        )
        for name, c in outcome.parsed.get("criteria", {}).items()
    )
