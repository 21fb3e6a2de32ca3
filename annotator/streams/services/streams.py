"""Making a stream: its settings checked, its salt drawn, and the batch its sampled traces join."""

from __future__ import annotations

import math
import re

from django.db import IntegrityError, transaction

from annotator.models import Batch, Stream
from annotator.models.batch import MIN_K
from annotator.streams.sampling import new_salt
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


def stream_settings_problems(
    *, name: str, human_rate, k, window, judges, rubric: Rubric | None = None
) -> list[str]:
    problems = []
    if not isinstance(name, str) or not NAME.match(name):
        problems.append(
            "name: 1 to 100 characters, letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    elif Stream.objects.filter(name=name).exists():
        problems.append(f"name: a stream named \u201c{name}\u201d already exists")
    if (
        isinstance(human_rate, bool)
        or not isinstance(human_rate, int | float)
        or not math.isfinite(human_rate)
    ):
        problems.append("human_rate: a number above 0 and at most 1")
    elif not 0 < human_rate <= 1:
        # A stream nobody reviews has no human labels, so its judges can never be calibrated.
        problems.append(
            f"human_rate: {human_rate} is not in (0, 1]: a share of the traces must go to people, "
            "or the judges cannot be calibrated against them"
        )
    if isinstance(k, bool) or not isinstance(k, int) or k < MIN_K:
        problems.append(f"k: a whole number of at least {MIN_K} (independent human ratings per trace)")
    if not isinstance(window, str | int) or isinstance(window, bool):
        problems.append("window: 'day', 'week' or a whole number of human-labelled traces")
    else:
        text = str(window)
        if text not in WINDOWS and not (text.isdigit() and int(text) >= 2):
            problems.append(f"window: {window!r} is not 'day', 'week' or a whole number of at least 2")
    problems += judges_problems(judges, rubric)
    return problems


def judges_problems(judges, rubric: Rubric | None) -> list[str]:
    """What is wrong with a stream's ``judges``: names (scores pushed) and objects (judges the worker runs)."""
    if not isinstance(judges, list):
        return ["judges: a list of judge names (scores pushed) and judge objects (run by the worker)"]
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
    names = [_name(j) for j in judges]
    if not problems and len(set(names)) != len(names):
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
        raise StreamRefused([str(e) for e in exc.errors]) from None
    # The batch the run judges score the unsampled traces in: closed, so never offered to people.
    judge_batch = None
    if runs:
        try:
            judge_batch = batch_create(
                name=JUDGE_BATCH_PREFIX + name, k=k, rubric=rubric, created_by=created_by
            )
        except ImportRefused as exc:
            raise StreamRefused([str(e) for e in exc.errors]) from None
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
    for key, low, integer, strict in (
        ("temperature", 0, False, False),
        ("max_tokens", 1, True, False),
        ("concurrency", 1, True, False),
    ):
        if key in raw and not _number(raw[key], low=low, integer=integer, strict=strict):
            kind = "a whole number" if integer else "a number"
            problems.append(f"{where}.{key}: {kind} of at least {low}, not {raw[key]!r}")
    return problems


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
