"""What a judge run has done so far: calls, failures, retries, tokens, estimated cost and time left."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from annotator.counted import counted

REASONS_SHOWN = 3  # the most common failure reasons a summary names
REASON_CHARS = 200  # a reason is model or endpoint text: long ones are cut
CURRENCY_CHARS = 8  # a currency code (USD, EUR, ...), as JudgeCall.currency stores it


def call_reasons(problems: Iterable[tuple[str, str]]) -> list[str]:
    """The distinct reasons one call failed, without the dimension they were found in: a score outside
    the scale on all five dimensions is one reason of that call, so the counts are counts of calls."""
    reasons: list[str] = []
    for _dimension, error in problems:
        reason = " ".join(error.split())
        reason = reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"
        if reason and reason not in reasons:
            reasons.append(reason)
    return reasons


DEFAULT_CURRENCY = "USD"


def currency_code(text: object) -> str:
    """``text`` as a currency code (``usd`` → ``USD``): 1 to 8 letters. Raises ValueError otherwise."""
    code = text.strip().upper() if isinstance(text, str) else ""
    if not (code and code.isascii() and code.isalpha() and len(code) <= CURRENCY_CHARS):
        raise ValueError(
            f"\u201c{text}\u201d is not a currency code such as USD or EUR (1 to {CURRENCY_CHARS} letters)"
        )
    return code


@dataclass(frozen=True)
class Prices:
    """Prices per million tokens, in ``currency`` (USD unless the user names another)."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0
    currency: str = DEFAULT_CURRENCY

    @property
    def known(self) -> bool:
        return bool(self.input_per_million or self.output_per_million)

    def cost_of(self, tokens_in: float | None, tokens_out: float | None) -> float:
        """What ``tokens_in`` input and ``tokens_out`` output tokens cost: the one formula of a run's spend."""
        return ((tokens_in or 0) * self.input_per_million + (tokens_out or 0) * self.output_per_million) / 1e6

    def show(self, amount: float) -> str:
        """``amount`` with its currency, as pages and summaries print it: "0.1234 USD"."""
        return f"{amount:.4f} {self.currency}"

    @classmethod
    def from_file(cls, path: str | Path, model: str, currency: str = DEFAULT_CURRENCY) -> Prices:
        """A JSON file ``{"<model>": {"input": 2.5, "output": 10.0}, ...}`` (per million tokens); an entry's
        ``"currency"`` overrides ``currency``."""
        try:
            table = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read the prices file {path}: {exc}") from None
        entry = table.get(model) if isinstance(table, dict) else None
        if not isinstance(entry, dict):
            raise ValueError(f"the prices file {path} has no entry for model \u201c{model}\u201d")  # noqa: TRY004
        try:
            currency = currency_code(entry.get("currency", currency))
        except ValueError as exc:
            raise ValueError(f"the prices of \u201c{model}\u201d in {path}: {exc}") from None
        try:
            return cls(float(entry.get("input", 0)), float(entry.get("output", 0)), currency)
        except (TypeError, ValueError):
            raise ValueError(f"the prices of \u201c{model}\u201d in {path} are not numbers") from None


@dataclass
class RunProgress:
    total: int
    skipped: int = 0
    done: int = 0
    scored: int = 0
    failed: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cached: int = 0  # calls served from the response cache: done, not paid
    reasons: Counter = field(default_factory=Counter)  # failure reason -> calls that failed for it
    prices: Prices = field(default_factory=Prices)
    started: float = field(default_factory=time.monotonic)

    def add(
        self,
        *,
        ok: bool,
        attempts: int,
        tokens_in: int | None,
        tokens_out: int | None,
        cached: bool = False,
        problems: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Count one call; ``problems`` are a failed call's (dimension, error) pairs."""
        self.done += 1
        self.scored += ok
        self.failed += not ok
        if not ok:
            self.reasons.update(call_reasons(problems) or ["no reason recorded"])
        if cached:
            self.cached += 1
            return
        self.retries += max(0, attempts - 1)
        self.tokens_in += tokens_in or 0
        self.tokens_out += tokens_out or 0

    @property
    def cost(self) -> float:
        return self.prices.cost_of(self.tokens_in, self.tokens_out)

    @property
    def paid(self) -> int:
        return self.done - self.cached

    def top_reasons(self, n: int = REASONS_SHOWN) -> list[tuple[str, int]]:
        """The ``n`` most common failure reasons with their counts, most common first."""
        return self.reasons.most_common(n)

    def failed_text(self) -> str:
        """ "14 failed", followed by the most common reasons when there are failures."""
        text = f"{self.failed} failed"
        top = self.top_reasons()
        if top:
            text += ": " + "; ".join(f"{reason} ({count})" for reason, count in top)
            if len(self.reasons) > len(top):
                text += f"; {counted(len(self.reasons) - len(top), 'other reason', 'other reasons')}"
        return text

    @property
    def eta_seconds(self) -> float | None:
        if not self.done:
            return None
        return (time.monotonic() - self.started) / self.done * (self.total - self.done)

    def as_dict(self) -> dict:
        return {
            "total": self.total,
            "skipped": self.skipped,
            "done": self.done,
            "scored": self.scored,
            "cached": self.cached,
            "paid": self.paid,
            "failed": self.failed,
            "retries": self.retries,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost": round(self.cost, 4) if self.prices.known else None,
            "currency": self.prices.currency if self.prices.known else None,
            "eta_seconds": None if self.eta_seconds is None else round(self.eta_seconds),
            "failure_reasons": [{"reason": r, "count": c} for r, c in self.top_reasons()],
        }

    def summary(self, *, reasons: bool = False) -> str:
        """One line of counts; ``reasons`` adds the most common failure reasons after the failed count
        (the job page's line; the command prints each failed call below its summary instead)."""
        parts = [
            f"{self.done}/{self.total} calls",
            self.failed_text() if reasons else f"{self.failed} failed",
            f"{self.retries} retries",
            f"{self.tokens_in:,} tokens in / {self.tokens_out:,} out",
        ]
        if self.prices.known:
            parts.append(f"estimated cost {self.prices.show(self.cost)}")
        parts.append(f"{counted(self.paid, 'paid call', 'paid calls')}, {self.cached} served from the cache")
        return ", ".join(parts)
