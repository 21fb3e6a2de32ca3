"""What one call produced, as the ledger saves it: built from its answer (a call sent on its own or one answer of
a provider's batch), or from the stored call the response cache serves; and the count of outcomes in a run's
progress."""

from __future__ import annotations

from collections.abc import Callable

from annotator.judges.engine.calls import Task
from annotator.judges.engine.client import CallResult, ChatClient, JudgeCallError
from annotator.judges.engine.progress import RunProgress
from annotator.judges.services.runs import CallOutcome
from annotator.models import JudgeCall


def outcome_of(
    task: Task,
    answer: CallResult | JudgeCallError,
    *,
    client: ChatClient,
    parse: Callable[..., tuple],
    provider_batch: str = "",
) -> CallOutcome:
    """The outcome of ``task`` from its ``answer``, read with ``parse``; a JudgeCallError is a failed call that
    carries what the endpoint said. No database: it runs in the worker threads."""
    outcome = CallOutcome(
        item=task.item,
        enhanced=task.enhanced,
        status=JudgeCall.OK,
        prompt=task.messages,
        sample=task.sample,
        swapped=task.swapped,
        request_key=task.key,
        provider_batch=provider_batch,
    )
    if isinstance(answer, JudgeCallError):
        outcome.status, outcome.raw_output, outcome.attempts = JudgeCall.FAILED, answer.body, answer.attempts
        outcome.http_status, outcome.problems = answer.status, [("", f"call failed: {answer}")]
        outcome.request = client.request_params()
        return outcome
    outcome.raw_output, outcome.attempts, outcome.latency = answer.text, answer.attempts, answer.latency
    outcome.tokens_in, outcome.tokens_out, outcome.http_status = answer.tokens_in, answer.tokens_out, 200
    outcome.sent, outcome.output_mode = answer.sent, answer.output_mode
    outcome.request = answer.request
    outcome.parsed, outcome.problems = parse(answer.text, answer.logprobs)
    outcome.status = JudgeCall.answered_status(outcome.problems)
    return outcome


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


def count_outcomes(progress: RunProgress, outcomes: list[CallOutcome]) -> list[CallOutcome]:
    """Count ``outcomes`` in ``progress`` (a cached one as served, not paid); returns those that gave no score."""
    for outcome in outcomes:
        progress.add(
            ok=outcome.status == JudgeCall.OK,
            attempts=outcome.attempts,
            tokens_in=outcome.tokens_in,
            tokens_out=outcome.tokens_out,
            cached=outcome.cached,
            problems=outcome.problems,
        )
    return [outcome for outcome in outcomes if outcome.status != JudgeCall.OK]
