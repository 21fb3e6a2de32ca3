"""--max-cost caps at every concurrency: long answers, many calls in flight, and the bound the dry run states."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from annotator.judges.engine.budget import CAP_MAX_TOKENS, input_tokens
from annotator.judges.engine.runner import batch_items, render_items
from annotator.judges.engine.templates import load_template
from annotator.models import Batch, JudgeCall
from tests.factories import make_batch
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

RULE = "hub_answer_correctness"
PRICE_IN, PRICE_OUT = 2.5, 10.0  # per million tokens: a 2,000-token answer costs 0.02
CAP = 0.10
LONG = '{"score": 0.75, "reason": "' + "It answers the question with care. " * 228 + '"}'  # ~2,000 tokens


def _cost(tokens_in: int, tokens_out: int) -> float:
    return (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1e6


def _run(fake, batch, *extra):
    prices = ("--price-in", str(PRICE_IN), "--price-out", str(PRICE_OUT))
    run_judge(fake, batch, *prices, *extra)


@pytest.mark.django_db
@pytest.mark.parametrize("concurrency", [16, 4, 1])
@pytest.mark.parametrize("max_tokens", [None, 2500])
def test_spend_stays_within_the_cap_plus_the_calls_in_flight(concurrency, max_tokens, capsys):
    """Before: each call in flight was estimated at 200 output tokens and never re-estimated, so answers of
    ~2,000 tokens spent 0.477 at concurrency 16, 0.186 at 4 and 0.124 at 1 under a 0.10 cap."""
    assert 1900 <= len(LONG) // 4 <= 2100
    make_batch("long", n_items=40)
    bound = max_tokens or CAP_MAX_TOKENS
    extra = ["--max-tokens", str(max_tokens)] if max_tokens else []
    with FakeJudge(reply=lambda prompt: LONG, latency=0.05) as fake:
        # Answers cut at 1,024 tokens are unreadable, so that run ends "failed" (status 1) rather than 3.
        with pytest.raises(CommandError, match="stopped at --max-cost|unreadable"):
            _run(
                fake,
                "long",
                "--judge",
                "A",
                "--concurrency",
                str(concurrency),
                "--max-cost",
                str(CAP),
                *extra,
            )
        sent = [r["body"] for r in fake.requests]
    assert "The run stopped starting calls at the cost cap of 0.1" in capsys.readouterr().out
    # Every call carried the bound: none could be charged for more output.
    assert sent and all(body["max_tokens"] == bound for body in sent)
    calls = list(JudgeCall.objects.filter(judge__name="A"))
    assert len(calls) == len(sent) and all(c.tokens_out <= bound for c in calls)
    spent = sum(_cost(c.tokens_in, c.tokens_out) for c in calls)
    # The calls in flight when the cap was reached are each bounded by their input and max_tokens; the run
    # reserves that bound for them, so at most one call's output passes the cap.
    in_flight_bound = max(_cost(c.tokens_in, bound) for c in calls)
    assert spent <= CAP + in_flight_bound
    assert spent <= CAP + _cost(0, bound)
    # ...and the cap is used, not abandoned early: the next call would not have fitted.
    assert spent > CAP - 2 * in_flight_bound


@pytest.mark.django_db
def test_the_dry_run_states_the_bound_and_the_max_tokens_sent(capsys):
    make_batch("dry", n_items=6)
    batch = Batch.objects.get(name="dry")
    tasks = render_items(batch_items(batch), load_template(RULE), batch.rubric_obj)
    largest = max(input_tokens(t.messages) for t in tasks)
    with FakeJudge() as fake:
        _run(fake, "dry", "--dry-run", "--max-cost", str(CAP))
        out = capsys.readouterr().out
        assert fake.calls == 0
    one = _cost(largest, CAP_MAX_TOKENS)
    assert f"every call is sent max_tokens {CAP_MAX_TOKENS:,}" in out
    assert f"one call costs at most {one:.4f}" in out
    assert f"the spend stays at or below {CAP + _cost(0, CAP_MAX_TOKENS):.4f}" in out
    assert f"{6 * CAP_MAX_TOKENS:,} output tokens (--max-tokens {CAP_MAX_TOKENS} per call" in out
