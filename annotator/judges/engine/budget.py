"""Cost before and during a run: token estimates for a dry run, and the cap that stops starting calls.

Input tokens are estimated as one token per 4 characters of each message plus 4 per message (OpenAI's rule
of thumb for English text; the provider's own tokenizer may count 10–20% either way). Output tokens are the
run's ``max_tokens`` when set (an upper bound), else the mean of the model's earlier paid answers with this
template, else ``DEFAULT_OUTPUT_TOKENS``.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

from annotator.counted import counted
from annotator.judges.engine.calls import Task
from annotator.judges.engine.progress import Prices

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
DEFAULT_OUTPUT_TOKENS = 200
CAP_MAX_TOKENS = 1024  # sent with every call of a capped run that names no --max-tokens


def input_tokens(messages: list[dict[str, str]]) -> int:
    """Estimated input tokens of ``messages``: 10 characters are 3 tokens, plus 4 for the message.

    >>> input_tokens([{"role": "user", "content": "x" * 10}])
    7
    """
    return sum(
        math.ceil(len(m.get("content") or "") / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE for m in messages
    )


@dataclass(frozen=True)
class Estimate:
    calls: int
    cached: int  # served from the response cache: not paid
    tokens_in: int
    tokens_out: int
    output_basis: str  # how output tokens were estimated, in words
    prices: Prices
    bound: CapBound | None = None  # with --max-cost: the most the run can spend

    @property
    def cost(self) -> float:
        return (
            self.tokens_in * self.prices.input_per_million + self.tokens_out * self.prices.output_per_million
        ) / 1e6

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "cached": self.cached,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost": self.cost if self.prices.known else None,
            "output_basis": self.output_basis,
            "cap": self.bound.as_dict() if self.bound else None,
        }


def estimate(
    tasks: list[Task],
    *,
    cached: int,
    output_tokens: int,
    output_basis: str,
    prices: Prices,
    bound: CapBound | None = None,
) -> Estimate:
    """The estimate for paying ``tasks`` (those the cache does not serve)."""
    return Estimate(
        calls=len(tasks),
        cached=cached,
        tokens_in=sum(input_tokens(t.messages) for t in tasks),
        tokens_out=output_tokens * len(tasks),
        output_basis=output_basis,
        prices=prices,
        bound=bound,
    )


def call_bound(client) -> int | None:
    """The ``max_tokens`` each call of ``client`` is sent (the provider's own default included): the most
    output one call can be charged for. None when no bound is sent."""
    bound = client.params.get("max_tokens")
    return int(bound) if bound else None


def bound_for_cap(client, max_cost: float | None) -> str:
    """A capped run must bound every call: when a cap is set and ``client`` sends no ``max_tokens``, it sends
    ``CAP_MAX_TOKENS`` from now on. Returns the note saying so (empty when nothing changed)."""
    if max_cost is None or call_bound(client) is not None:
        return ""
    client.max_tokens = CAP_MAX_TOKENS
    return (
        f"Each call is sent max_tokens {CAP_MAX_TOKENS} (the bound a run with --max-cost sends when "
        "--max-tokens is not given), so no call can cost more than its input and that many output tokens."
    )


@dataclass(frozen=True)
class CapBound:
    """What a run with a cap can spend at most, for the dry run: see ``CostCap``."""

    limit: float
    max_tokens: int
    largest_call: float  # the most one call can cost: the largest prompt's estimated input plus max_tokens
    over: float  # the most the run can spend past the cap: one call's output at max_tokens

    @property
    def total(self) -> float:
        return self.limit + self.over

    def as_dict(self) -> dict:
        return {
            "max_cost": self.limit,
            "max_tokens": self.max_tokens,
            "largest_call": self.largest_call,
            "at_most": self.total,
        }


def cap_bound(tasks: list[Task], *, limit: float, max_tokens: int, prices: Prices) -> CapBound:
    """The bound ``CostCap`` keeps for ``tasks``, with inputs counted as estimated."""
    largest = max((input_tokens(t.messages) for t in tasks), default=0)
    out = max_tokens * prices.output_per_million / 1e6
    return CapBound(
        limit=limit,
        max_tokens=max_tokens,
        largest_call=largest * prices.input_per_million / 1e6 + out,
        over=out,
    )


WAIT = None  # ``CostCap.may_start``: the call does not fit now, but may once the calls in flight are paid


@dataclass
class CostCap:
    """Keeps the spend of a run within ``limit``, whatever the concurrency.

    A call starts only when what was paid (at the tokens the provider reported), plus a reservation for
    every call in flight, plus this call's estimate, fits under ``limit``. A call in flight reserves its
    input estimate and ``max_tokens`` output tokens, the most it can be charged for; once it is answered its
    real cost replaces the reservation. A call's estimate is its input estimate and the mean output of the
    answers received so far (before any: ``output_tokens``), both scaled by what the answers showed: the input
    estimate by the ratio of reported to estimated input tokens. A call that does not fit while others are in
    flight waits for them; one that does not fit with none in flight ends the run (``reached``).

    So the spend never passes ``limit`` by more than the last call started costs above its estimate, at most
    its output at ``max_tokens`` (with inputs counted as estimated). Used from the run's main thread only.
    """

    limit: float
    prices: Prices
    output_tokens: int  # a call's output estimate before any answer came back
    max_tokens: int  # the bound every call is sent
    spent: float = 0.0
    in_flight: dict[int, float] = field(default_factory=dict)  # id(task) → its reservation
    inputs: dict[int, int] = field(default_factory=dict)  # id(task) → its estimated input tokens
    reached: bool = False
    answered: int = 0
    answered_out: int = 0  # output tokens of the answers received
    answered_in: int = 0  # input tokens they were charged for …
    answered_in_estimate: int = 0  # … and the estimate of those inputs
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def call_cost(self, tokens_in: float, tokens_out: float) -> float:
        return self.prices.cost_of(tokens_in, tokens_out)

    def _input(self, task: Task) -> float:
        guess = input_tokens(task.messages)
        if self.answered_in_estimate:
            return guess * self.answered_in / self.answered_in_estimate
        return guess

    def _output(self) -> float:
        mean = self.answered_out / self.answered if self.answered else self.output_tokens
        return min(mean, self.max_tokens)

    def estimated(self, task: Task) -> float:
        """This call's expected cost, re-estimated from the answers received so far."""
        return self.call_cost(self._input(task), self._output())

    def reservation(self, task: Task) -> float:
        """The most this call is expected to cost: its input estimate and ``max_tokens`` output tokens."""
        return self.call_cost(self._input(task), self.max_tokens)

    def may_start(self, task: Task) -> bool | None:
        """True: start it (it is reserved). WAIT (None): not now, calls in flight may leave room.
        False: the cap is reached, no more calls start."""
        with self._lock:
            if self.reached:
                return False
            if self.spent + sum(self.in_flight.values()) + self.estimated(task) > self.limit:
                if self.in_flight:
                    return WAIT
                self.reached = True
                return False
            self.in_flight[id(task)] = self.reservation(task)
            self.inputs[id(task)] = input_tokens(task.messages)
            return True

    def finished(
        self, task: Task, tokens_in: int | None, tokens_out: int | None, *, paid: bool = True
    ) -> None:
        with self._lock:
            guess = self.in_flight.pop(id(task), 0.0)
            estimated_in = self.inputs.pop(id(task), 0)
            if not paid:
                return
            if tokens_in is None and tokens_out is None:
                self.spent += guess  # answered without a usage count: assume the most it could cost
                return
            self.spent += self.call_cost(tokens_in or 0, tokens_out or 0)
            self.answered += 1
            self.answered_out += tokens_out or 0
            if tokens_in is not None and estimated_in:
                self.answered_in += tokens_in
                self.answered_in_estimate += estimated_in


def estimate_lines(guess: Estimate) -> list[str]:
    """The dry run's report, in words: the command prints it, the Run a judge form shows it."""
    prices = guess.prices
    cost = (
        (
            f"estimated cost {prices.show(guess.cost)} (at {prices.input_per_million:g} in / "
            f"{prices.output_per_million:g} out per million tokens)"
        )
        if prices.known
        else "no cost estimate (give --price-in/--price-out or --prices)"
    )
    lines = [
        f"Dry run, nothing was called: {counted(guess.calls, 'call', 'calls')} to pay for, {guess.cached} more served from the "
        f"cache. Estimated {guess.tokens_in:,} input tokens (1 token per 4 characters of each message, plus 4 "
        f"per message) and {guess.tokens_out:,} output tokens ({guess.output_basis}); {cost}. A judge that "
        f"already has some of these calls skips them too."
    ]
    if guess.bound is not None:
        b = guess.bound
        lines.append(
            f"With a cost cap of {prices.show(b.limit)}: every call is sent max_tokens {b.max_tokens:,}, so one "
            f"call costs at most {b.largest_call:.4f} (the largest prompt and {b.max_tokens:,} output tokens). "
            f"Calls in flight are reserved at that bound, so the spend stays at or below {b.total:.4f}: the cap "
            f"plus one call's output at max_tokens ({b.over:.4f}), at any concurrency, with inputs counted as "
            f"estimated."
        )
    return lines
