"""Making a stream: its settings checked, its salt drawn, and the batch its sampled traces join."""

from __future__ import annotations

import math
import re

from django.db import IntegrityError, transaction

from annotator.models import Batch, Stream
from annotator.models.batch import MIN_K
from annotator.streams.sampling import new_salt
from annotator.uploads.files.checks import MAX_K
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.services.batches import batch_create
from hcs.rubric import Rubric

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
WINDOWS = ("day", "week")
BATCH_PREFIX = "stream: "
JUDGE_BATCH_PREFIX = "stream judges: "


class StreamRefused(ValueError):
    """The settings of a stream, or a request about one, cannot be taken; ``problems`` says why."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


# A stream's judges each get a series per dimension, a row of the judges table and charts on the stream
# page; 20 keeps that page readable and quick (20,000 made it take a second and the list page 75,000 px),
# and is more judges than any comparison of judges needs.
MAX_JUDGES = 20
# Below one trace in a million, a stream gets about one human label a day at a million traces a day:
# less would leave the judges uncalibrated for good, the reason a rate of 0 is refused.
MIN_HUMAN_RATE = 1e-6
MAX_WINDOW = 100_000  # sampled traces per count window: more is months of labels before a first point


def _is_number(value, *, integer: bool = False) -> bool:
    """A JSON number (a whole one with ``integer``): not a bool, not a string, finite."""
    kinds = int if integer else int | float
    return not isinstance(value, bool) and isinstance(value, kinds) and math.isfinite(value)


def stream_settings_problems(
    *, name: str, human_rate, k, window, judges, rubric: Rubric | None = None
) -> list[str]:
    """Each problem as "key: what is wrong"; values are taken as JSON gives them, never converted (a
    string "0.3" or true is refused, not read as 0.3 or 1)."""
    problems = []
    if not isinstance(name, str) or not NAME.match(name):
        problems.append(
            "name: 1 to 100 characters, letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    elif Stream.objects.filter(name=name).exists():
        problems.append(f"name: a stream named \u201c{name}\u201d already exists")
    if not _is_number(human_rate):
        problems.append(f"human_rate: a number above 0 and at most 1, not {human_rate!r}")
    elif not 0 < human_rate <= 1:
        # A stream nobody reviews has no human labels, so its judges can never be calibrated.
        problems.append(
            f"human_rate: {human_rate} is not in (0, 1]: a share of the traces must go to people, "
            "or the judges cannot be calibrated against them"
        )
    elif human_rate < MIN_HUMAN_RATE:
        problems.append(
            f"human_rate: {human_rate} is below {MIN_HUMAN_RATE:g}: so few traces would go to people "
            "that the judges could not be calibrated against them"
        )
    if not _is_number(k, integer=True) or not MIN_K <= k <= MAX_K:
        problems.append(
            f"k: a whole number from {MIN_K} to {MAX_K} (independent human ratings per trace), not {k!r}"
        )
    problems += _window_problems(window)
    problems += judges_problems(judges, rubric)
    return problems


def _window_problems(window) -> list[str]:
    if window in WINDOWS:
        return []
    if _is_number(window, integer=True) and 2 <= window <= MAX_WINDOW:
        return []
    return [
        f"window: {window!r} is not 'day', 'week' or a whole number (not a string) from 2 to "
        f"{MAX_WINDOW:,} of human-labelled traces"
    ]


def judges_problems(judges, rubric: Rubric | None) -> list[str]:
    """What is wrong with a stream's ``judges``: names (scores pushed) and objects (judges the worker runs)."""
    if not isinstance(judges, list):
        return ["judges: a list of judge names (scores pushed) and judge objects (run by the worker)"]
    if len(judges) > MAX_JUDGES:
        return [f"judges: at most {MAX_JUDGES} judges per stream, not {len(judges)}"]
    problems = []
    for n, judge in enumerate(judges):
        if isinstance(judge, dict):
            problems += judge_run_problems(judge, rubric or Rubric.default(), where=f"judges[{n}]")
        elif not isinstance(judge, str) or not judge.strip():
            problems.append(f"judges[{n}]: a judge name or a judge object ({{name, template, model, ...}})")
        elif len(judge.strip()) > 200:
            problems.append(f"judges[{n}]: the name is longer than 200 characters")
        elif "\x00" in judge:
            problems.append(f"judges[{n}]: the name contains a NUL character")
    if problems:  # a name to compare is there only when every judge is well-formed
        return problems
    names = [_name(j) for j in judges]
    if len(set(names)) != len(names):
        problems.append("judges: a name is given twice")
    return problems


def _name(judge) -> str:
    return (judge.get("name") if isinstance(judge, dict) else judge).strip()


def judge_names_and_runs(judges: list) -> tuple[list[str], list[dict]]:
    """(every judge's name, the checked judge objects with their defaults filled in) of valid ``judges``."""
    return [_name(j) for j in judges], [judge_run_config(j) for j in judges if isinstance(j, dict)]


@transaction.atomic
def stream_create(*, name, human_rate, k, window, judges, created_by, rubric: Rubric | None = None) -> Stream:
    """A new stream with its own batch (k = the stream's k). Raises ``StreamRefused``."""
    rubric = rubric or Rubric.default()
    problems = stream_settings_problems(
        name=name, human_rate=human_rate, k=k, window=window, judges=judges, rubric=rubric
    )
    if problems:
        raise StreamRefused(problems)
    names, runs = judge_names_and_runs(judges)
    try:
        batch = batch_create(name=BATCH_PREFIX + name, k=k, rubric=rubric, created_by=created_by)
    except ImportRefused as exc:
        raise StreamRefused(_batch_problems(exc)) from None
    # The batch the run judges score the unsampled traces in: closed, so never offered to people.
    judge_batch = None
    if runs:
        try:
            judge_batch = batch_create(
                name=JUDGE_BATCH_PREFIX + name, k=k, rubric=rubric, created_by=created_by
            )
        except ImportRefused as exc:
            raise StreamRefused(_batch_problems(exc)) from None
        Batch.objects.filter(pk=judge_batch.pk).update(is_open=False)
    try:
        with transaction.atomic():
            return Stream.objects.create(
                name=name,
                rubric=rubric.to_dict(),
                judges=names,
                judge_runs=runs,
                judge_batch=judge_batch,
                human_rate=float(human_rate),
                k=k,
                window=str(window),
                salt=new_salt(),
                batch=batch,
                created_by=created_by,
            )
    except IntegrityError:
        raise StreamRefused([f"name: a stream named \u201c{name}\u201d already exists"]) from None


def _batch_problems(exc: ImportRefused) -> list[str]:
    """The batch's refusal under the stream's keys: its k, its rubric, else its name (a batch so named
    exists already)."""
    problems = []
    for error in exc.errors:
        text = str(getattr(error, "message", error))
        key = "k" if text.startswith("k ") else "rubric" if "rubric" in text.lower() else "name"
        problems.append(f"{key}: {text}")
    return problems


# The keys of a judge the worker runs; every other key is refused (a misspelt cap would be no cap).
RUN_KEYS = {
    "name": "the judge's name (its scores and calls are kept under it)",
    "template": "a shipped scoring template",
    "model": "the model the provider serves",
    "provider": "a provider of the registry",
    "base_url": "the endpoint",
    "key_env": "the environment variable holding the API key",
    "max_cost_per_day": "the most the judge may spend per UTC day",
    "currency": "the currency of the prices and the cap",
    "price_in": "price per million input tokens",
    "price_out": "price per million output tokens",
    "temperature": "sampling temperature",
    "max_tokens": "the most output tokens per call",
    "concurrency": "calls in flight at once",
}
RUN_REQUIRED = ("name", "template", "model")


def _number(value, *, low: float, integer: bool = False, strict: bool = False) -> bool:
    """Whether ``value`` is a finite number (a whole one with ``integer``) >= ``low`` (> with ``strict``)."""
    kinds = int if integer else int | float
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        return False
    return value > low if strict else value >= low


def judge_run_problems(raw: dict, rubric: Rubric, *, where: str) -> list[str]:
    """What is wrong with one judge object, each problem naming ``where`` and the key."""
    problems = [
        f"{where}: unknown key {key!r} (a judge the worker runs takes {', '.join(RUN_KEYS)})"
        for key in raw
        if key not in RUN_KEYS
    ]
    for key in RUN_REQUIRED:
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{where}.{key}: {RUN_KEYS[key]} is required (a non-empty string)")
    name = raw.get("name")
    if isinstance(name, str) and (len(name.strip()) > 200 or "\x00" in name):
        problems.append(f"{where}.name: at most 200 characters, with no NUL character")
    if isinstance(raw.get("template"), str) and raw["template"].strip():
        problems += [f"{where}.template: {p}" for p in _template_problems(raw["template"].strip(), rubric)]
    problems += [f"{where}.{p}" for p in _endpoint_problems(raw)]
    problems += [f"{where}.{p}" for p in _cost_problems(raw)]
    for key, low, high, integer in RUN_BOUNDS:
        value = raw.get(key)
        if key in raw and not (_number(value, low=low, integer=integer) and value <= high):
            kind = "a whole number" if integer else "a number"
            problems.append(f"{where}.{key}: {kind} from {low} to {high:,}, not {value!r}")
    return problems


# (key, lowest, highest, whole number): temperature as the providers take it (0 to 2); concurrency up
# to what one worker's thread pool and a provider's rate limit sensibly bear; max_tokens up to the
# longest output any served model gives.
RUN_BOUNDS = (
    ("temperature", 0, 2, False),
    ("max_tokens", 1, 200_000, True),
    ("concurrency", 1, 64, True),
)


def _template_problems(name: str, rubric: Rubric) -> list[str]:
    from annotator.judges.engine.templates import TemplateError, available_templates, load_template

    shipped = available_templates()
    if name not in shipped:
        return [f"{name!r} is not a shipped template; shipped: {', '.join(shipped)}"]
    try:
        template = load_template(name)
    except TemplateError as exc:
        return [str(exc)]
    if template.pairwise:
        return [f"{name!r} compares two responses; a stream's judge scores one trace at a time"]
    missing = [d for d in template.dimension_keys(rubric) if d not in rubric.dimension_keys]
    if missing:
        return [
            f"{name!r} scores {', '.join(missing)}, not dimensions of the stream's rubric "
            f"({', '.join(rubric.dimension_keys)})"
        ]
    return []


def _endpoint_problems(raw: dict) -> list[str]:
    from django.conf import settings

    from annotator.judges.providers import JUDGE_PROVIDERS, UnknownProvider, provider_named

    problems = []
    for key in ("provider", "base_url", "key_env"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            problems.append(f"{key}: a non-empty string")
    if problems:
        return problems
    try:
        provider = provider_named(raw.get("provider"))
    except UnknownProvider:
        return [f"provider: {raw['provider']!r} is not one of {', '.join(JUDGE_PROVIDERS)}"]
    base_url = raw.get("base_url") or provider.base_url
    if not base_url:
        problems.append(f"base_url: the {provider.name} provider needs the endpoint's URL")
    elif not base_url.startswith(("http://", "https://")):
        problems.append(f"base_url: {base_url!r} is not an http(s) URL")
    key_env = raw.get("key_env") or provider.key_env
    if key_env not in settings.ANNOTATOR_JUDGE_KEY_ENVS and (
        "key_env" in raw or provider.needs_key(base_url or "")
    ):
        problems.append(
            f"key_env: {key_env} is not one of the API key variables this server allows "
            f"({', '.join(settings.ANNOTATOR_JUDGE_KEY_ENVS)}; ANNOTATOR_JUDGE_KEY_ENVS)"
        )
    return problems


def _cost_problems(raw: dict) -> list[str]:
    from annotator.judges.engine.progress import currency_code

    problems = []
    for key in ("price_in", "price_out"):
        if key in raw and not _number(raw[key], low=0):
            problems.append(f"{key}: a number of at least 0, not {raw[key]!r}")
    if "currency" in raw:
        try:
            currency_code(raw["currency"])
        except ValueError as exc:
            problems.append(f"currency: {exc}")
    cap = raw.get("max_cost_per_day")
    if cap is not None:
        if not _number(cap, low=0, strict=True):
            problems.append(f"max_cost_per_day: a number above 0, not {cap!r}")
        elif not (raw.get("price_in") or raw.get("price_out")):
            problems.append("max_cost_per_day: needs price_in and price_out to count the spend")
    return problems


def judge_run_config(raw: dict) -> dict:
    """A checked judge object as the stream stores it: stripped, its defaults filled in."""
    from annotator.judges.engine.progress import DEFAULT_CURRENCY, currency_code
    from annotator.judges.providers import provider_named

    provider = provider_named(raw.get("provider"))
    return {
        "name": raw["name"].strip(),
        "template": raw["template"].strip(),
        "model": raw["model"].strip(),
        "provider": provider.name,
        "base_url": (raw.get("base_url") or provider.base_url).strip(),
        "key_env": (raw.get("key_env") or provider.key_env).strip(),
        "max_cost_per_day": raw.get("max_cost_per_day"),
        "currency": currency_code(raw.get("currency") or DEFAULT_CURRENCY),
        "price_in": float(raw.get("price_in") or 0.0),
        "price_out": float(raw.get("price_out") or 0.0),
        **{key: raw[key] for key in ("temperature", "max_tokens", "concurrency") if key in raw},
    }
