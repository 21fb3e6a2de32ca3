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

from annotator.judges.engine.calls import Task
from annotator.judges.engine.progress import Prices

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
DEFAULT_OUTPUT_TOKENS = 200


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
        }


def estimate(
    tasks: list[Task], *, cached: int, output_tokens: int, output_basis: str, prices: Prices
) -> Estimate:
    """The estimate for paying ``tasks`` (those the cache does not serve)."""
    return Estimate(
        calls=len(tasks),
        cached=cached,
        tokens_in=sum(input_tokens(t.messages) for t in tasks),
        tokens_out=output_tokens * len(tasks),
        output_basis=output_basis,
        prices=prices,
    )


@dataclass
class CostCap:
    """Stops starting calls before the spend (what was paid, at its real token counts, plus the estimate of every
    call in flight and of the next one) would pass ``limit``. Used from the run's main thread only."""

    limit: float
    prices: Prices
    output_tokens: int
    spent: float = 0.0
    in_flight: dict[int, float] = field(default_factory=dict)  # id(task) → its estimated cost
    reached: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def call_cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.prices.input_per_million + tokens_out * self.prices.output_per_million) / 1e6

    def estimated(self, task: Task) -> float:
        return self.call_cost(input_tokens(task.messages), self.output_tokens)

    def may_start(self, task: Task) -> bool:
        cost = self.estimated(task)
        with self._lock:
            if self.reached or self.spent + sum(self.in_flight.values()) + cost > self.limit:
                self.reached = True
                return False
            self.in_flight[id(task)] = cost
            return True

    def finished(
        self, task: Task, tokens_in: int | None, tokens_out: int | None, *, paid: bool = True
    ) -> None:
        with self._lock:
            guess = self.in_flight.pop(id(task), 0.0)
            if paid:
                known = tokens_in is not None or tokens_out is not None
                self.spent += self.call_cost(tokens_in or 0, tokens_out or 0) if known else guess
