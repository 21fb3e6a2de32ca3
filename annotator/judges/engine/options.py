"""Every option of a judge run, with its default, in one frozen ``RunOptions``; and how each entry point spells
them: the ``run_judge`` command's flags (``COMMAND_FLAGS``, which also build its parser), the Run a judge form's
cleaned data, and a background job's stored payload (whose keys stored jobs keep, so old jobs still read).

Loads no HTTP client: the web form builds its options in a worker that never runs a judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from annotator.judges.engine.budget import CAP_MAX_TOKENS
from annotator.judges.engine.progress import DEFAULT_CURRENCY, Prices, currency_code

# A name in annotator.judges.providers.JUDGE_PROVIDERS: the provider a run uses unless told another.
DEFAULT_PROVIDER = "openai"
CLIENT_OPTIONS = ("timeout", "max_retries", "backoff", "temperature", "max_tokens")  # client_for's keys


@dataclass(frozen=True)
class RunOptions:
    """How a judge run calls and what it calls, besides the batch and the template."""

    # The endpoint. base_url: none is the provider's; key_env: none is the provider's variable.
    provider: str = DEFAULT_PROVIDER
    base_url: str | None = None
    model: str | None = None
    key_env: str | None = None
    timeout: float = 60.0  # seconds, each whole request
    max_retries: int = 4
    backoff: float = 1.0  # the first retry's random wait's ceiling, seconds (doubles)
    temperature: float = 0.0
    max_tokens: int | None = None
    # The judge and which calls it makes.
    judge: str = ""  # the judge's name; empty: TEMPLATE/MODEL
    limit: int | None = None
    calibration_set: bool = False
    pairwise: bool = False
    baseline_system: str = ""
    enhanced_system: str = ""
    swap: bool = False
    samples: int = 1
    retry_failed: bool = False
    retry_unknown: bool = False
    force: bool = False
    # How the calls are asked for and sent.
    structured: bool = True
    logprobs: bool = True
    cache: bool = True
    concurrency: int = 8
    batch_api: bool = False
    poll_seconds: float = 30.0
    # What they cost.
    prices: Prices = field(default_factory=Prices)
    max_cost: float | None = None

    @property
    def pair(self) -> tuple[str, str] | None:
        """(baseline system, enhanced system) of a pairwise run; None for a scoring run."""
        return (self.baseline_system, self.enhanced_system) if self.pairwise else None

    def client_params(self) -> dict[str, Any]:
        """What ``annotator.judges.providers.client_for`` builds the client from."""
        chosen = {name: getattr(self, name) for name in CLIENT_OPTIONS}
        return {"provider": self.provider, "base_url": self.base_url, "model": self.model, **chosen}

    @classmethod
    def with_fields(cls, options: RunOptions | None, changed: dict[str, Any]) -> RunOptions:
        """``options`` (the defaults when None) with ``changed`` fields; TypeError names an unknown one."""
        unknown = sorted(set(changed) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"not a run option: {', '.join(unknown)}")
        return replace(options or cls(), **changed)

    @classmethod
    def from_form(cls, data: dict[str, Any]) -> RunOptions:
        """The Run a judge form's cleaned data (``annotator.judges.forms.judges.JudgeRunForm``)."""
        chosen = {name: data[name] for name in _FORM_FIELDS}
        prices = Prices(data["price_in"] or 0.0, data["price_out"] or 0.0, data["currency"])
        return cls(**chosen, cache=not data["no_cache"], prices=prices)

    def to_job_payload(self) -> dict[str, Any]:
        """The options a background job stores (with its batch and template): the keys its runs have always had."""
        return {
            **{name: getattr(self, name) for name in _FORM_FIELDS},
            "price_in": self.prices.input_per_million,
            "price_out": self.prices.output_per_million,
            "currency": self.prices.currency,
            "cache": self.cache,
        }

    @classmethod
    def from_job_payload(cls, payload: dict[str, Any]) -> RunOptions:
        """A job's stored payload; keys a job stored before they existed take their defaults."""
        defaults = cls()
        chosen = {
            name: payload[name] if payload.get(name) is not None else getattr(defaults, name)
            for name in (*_FORM_FIELDS, *CLIENT_OPTIONS)
        }
        currency = payload.get("currency") or DEFAULT_CURRENCY
        prices = Prices(payload["price_in"], payload["price_out"], currency)
        return cls(**chosen, cache=payload.get("cache", True), prices=prices)

    @classmethod
    def from_command_options(cls, options: dict[str, Any]) -> RunOptions:
        """``run_judge``'s parsed options (see ``COMMAND_FLAGS``). Raises ValueError naming the flag at fault."""
        chosen = {
            flag.field: not options[flag.dest] if flag.negated else options[flag.dest]
            for flag in COMMAND_FLAGS
            if flag.field
        }
        return cls(**chosen, prices=command_prices(options))


# The form's fields, and the payload's keys, that are run options under the same name.
_FORM_FIELDS = (
    "provider",
    "base_url",
    "model",
    "key_env",
    "concurrency",
    "retry_failed",
    "retry_unknown",
    "calibration_set",
    "judge",
    "temperature",
    "samples",
    "pairwise",
    "baseline_system",
    "enhanced_system",
    "swap",
    "max_cost",
    "max_tokens",
)


def command_prices(options: dict[str, Any]) -> Prices:
    """The prices of ``run_judge``'s --price-in/--price-out/--currency, or of the file --prices names."""
    try:
        currency = currency_code(options["currency"])
    except ValueError as exc:
        raise ValueError(f"--currency: {exc}") from None
    if not options["prices"]:
        return Prices(options["price_in"], options["price_out"], currency)
    try:
        return Prices.from_file(options["prices"], options["model"], currency)
    except ValueError as exc:
        raise ValueError(f"--prices: {exc}") from None


@dataclass(frozen=True)
class Flag:
    """One ``run_judge`` option: the run option it sets (none: the command's own), and argparse's arguments.
    A run option's default is its ``RunOptions`` default; a bool one is a switch (``negated``: --no-X)."""

    name: str
    field: str | None
    help: str | None
    type: type | None = None
    default: Any = None  # the command's own options only
    metavar: str | None = None
    dest: str = ""  # default: the flag's name, snake_cased
    negated: bool = False

    def __post_init__(self):
        if not self.dest:
            object.__setattr__(self, "dest", self.name.lstrip("-").replace("-", "_"))

    def add_to(self, parser, *, providers: str) -> None:
        """Add this flag to ``parser``; ``providers`` names the registered providers in --provider's help."""
        default = getattr(RunOptions(), self.field) if self.field else self.default
        switch = self.negated or (isinstance(default, bool) and self.type is None)
        extra = {"action": "store_true"} if switch else {"type": self.type, "default": default}
        if self.metavar:
            extra["metavar"] = self.metavar
        shown = self.help.replace("{providers}", providers) if self.help else None
        parser.add_argument(self.name, dest=self.dest, help=shown, **extra)


COMMAND_FLAGS = (
    Flag("--provider", "provider", "judge provider, one of: {providers} (default openai)"),
    Flag(
        "--base-url",
        "base_url",
        "e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1 (anthropic: default https://api.anthropic.com)",
    ),
    Flag("--model", "model", None),
    Flag("--judge", "judge", "judge name (default: TEMPLATE/MODEL)"),
    Flag(
        "--api-key-env",
        "key_env",
        "environment variable holding the API key (default: OPENAI_API_KEY, or "
        "ANTHROPIC_API_KEY with --provider anthropic)",
    ),
    Flag("--concurrency", "concurrency", "requests in flight at once (default 8)", int),
    Flag("--max-retries", "max_retries", "retries on 429, 5xx, connection errors, bad bodies", int),
    Flag("--backoff", "backoff", "ceiling of the first retry's random wait, seconds (doubles)", float),
    Flag("--timeout", "timeout", "deadline for each whole request, seconds", float),
    Flag("--temperature", "temperature", None, float),
    Flag(
        "--max-tokens",
        "max_tokens",
        f"the most output tokens a call may be charged for (with --max-cost and none given: {CAP_MAX_TOKENS})",
        int,
    ),
    Flag("--limit", "limit", "only the first N items", int),
    Flag(
        "--retry-failed",
        "retry_failed",
        "call again the items whose call failed or whose answer was unreadable or ambiguous",
    ),
    Flag(
        "--retry-unknown",
        "retry_unknown",
        "call again the calls a killed run sent whose outcome is unknown (they may be paid twice)",
    ),
    Flag(
        "--no-structured",
        "structured",
        "ask for free text instead of the template's JSON schema (response_format)",
        negated=True,
    ),
    Flag("--no-logprobs", "logprobs", "do not ask for the score token's logprobs", negated=True),
    Flag(
        "--force",
        "force",
        "call every item again, replacing its saved call (identical requests are still served from the cache)",
    ),
    Flag(
        "--no-cache",
        "cache",
        "pay for every call, even one identical to a request already answered",
        negated=True,
    ),
    Flag("--pairwise", "pairwise", "one call per prompt_id: baseline vs enhanced system"),
    Flag("--baseline-system", "baseline_system", "system_id of the baseline responses (with --pairwise)"),
    Flag("--enhanced-system", "enhanced_system", "system_id of the enhanced responses (with --pairwise)"),
    Flag("--swap", "swap", "with --pairwise: run each pair in both orders too (the position-swap probe)"),
    Flag(
        "--samples",
        "samples",
        "call every item N times (needs --temperature > 0): the judge's self-consistency",
        int,
        metavar="N",
    ),
    Flag(
        "--calibration-set",
        "calibration_set",
        "call only the items of the batch's frozen calibration set (see calibration_set)",
    ),
    Flag("--show-prompt", None, "print N rendered prompts and call nothing", int, 0, metavar="N"),
    Flag("--price-in", None, "price per million input tokens, for the cost estimate", float, 0.0),
    Flag("--price-out", None, "price per million output tokens", float, 0.0),
    Flag(
        "--prices",
        None,
        'JSON file {"MODEL": {"input": 2.5, "output": 10, "currency": "USD"}} per million tokens',
    ),
    Flag(
        "--currency",
        None,
        "the currency of the prices and of --max-cost, shown with every cost (default USD)",
        default=DEFAULT_CURRENCY,
    ),
    Flag(
        "--batch",
        "batch_api",
        "send the calls through the provider's batch API (about half the price; answers "
        "within 24 h); a rerun with --batch fetches a batch an earlier run left waiting",
        dest="batch_api",
    ),
    Flag(
        "--batch-poll",
        "poll_seconds",
        "how often --batch asks whether the batch has ended (default 30)",
        float,
        metavar="SECONDS",
    ),
    Flag(
        "--dry-run",
        None,
        "print the calls, estimated tokens and cost (with prices), and call nothing",
        default=False,
    ),
    Flag(
        "--max-cost",
        "max_cost",
        "keep this run's spend within USD: calls in flight are reserved at --max-tokens, so the spend "
        "passes it by at most one call's output (needs --price-in/--price-out or --prices)",
        float,
        metavar="USD",
    ),
)
