"""Item-level judge data as export tables: every score, every pairwise verdict, every call.

The rows are read a chunk at a time in primary-key order, so the CSV streams and the API pages over
the same rows with a cursor (the part of the table, the last primary key). The API key is never
stored, so it cannot be exported; call parameters are filtered once more by name all the same.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from annotator.judges.selectors.verdicts import counted_verdicts
from annotator.models import Batch, Judge, JudgeCall, JudgeCriterionScore, JudgeScore
from annotator.reports.exports.csv_safe import csv_lines

CHUNK = 2_000
IMPORTED = "imported"  # call_status of a score or verdict that came from a file, not from a call

# The columns of judge_scores.csv, in order, each with its type in the published dataset's
# ``judge_scores`` config (a pyarrow type alias; annotator/judges/exports/hf.py) or None where the
# dataset leaves the column out. One list, so a column published here reaches both.
JUDGE_SCORES_TABLE: tuple[tuple[str, str | None], ...] = (
    ("item_id", "string"),
    ("system_id", "string"),
    ("judge", "string"),
    ("judge_version", "string"),
    ("dimension", "string"),
    ("raw_value", "float64"),
    ("value", "float64"),
    ("reason", "string"),
    ("model", "string"),
    ("provider", "string"),
    ("template_hash", "string"),
    ("sample", "int16"),
    ("call_status", "string"),
    ("prompt_id", None),
    ("scale_min", None),
    ("scale_max", None),
    ("higher_is_better", None),
    # G-Eval: the score as the probability-weighted mean over the score token's alternatives, and the
    # probability of the most likely one; empty when the call asked for no logprobs.
    ("logprob_score", "float64"),
    ("confidence", "float64"),
)
JUDGE_SCORES_COLUMNS = [name for name, _ in JUDGE_SCORES_TABLE]
JUDGE_SCORES_PUBLISHED = {name: kind for name, kind in JUDGE_SCORES_TABLE if kind is not None}
PAIRWISE_FIRST_COLUMNS = [
    "prompt_id",
    "baseline_system",
    "enhanced_system",
    "order_sent",
    "winner",
    "confidence",
]
PAIRWISE_LAST_COLUMNS = [
    "judge",
    "judge_version",
    "baseline_item_id",
    "enhanced_item_id",
    "winner_shown",
    "baseline_score",
    "enhanced_score",
    "reason",
    "model",
    "provider",
    "template_hash",
    "call_status",
]
# Parameter names that could hold a credential; nothing of the kind is stored, and none is ever written.
_SECRET = re.compile(r"api[_-]?key|authori[sz]ation|secret|password|bearer|credential", re.IGNORECASE)


@dataclass(frozen=True)
class JudgeInfo:
    name: str
    version: str
    model: str
    provider: str
    template_hash: str


def safe_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (params or {}).items() if not _SECRET.search(str(k))}


def judge_info(judge: Judge) -> JudgeInfo:
    """What a row says about its judge. ``version`` is the template version and the hash of everything the
    judge version is (template text, model, parameters): the suffix a later version's name carries."""
    # Imported here: the run services load pandas, which the web workers that route the API never need.
    from annotator.judges.services.runs import version_key

    version = judge.template_version
    if judge.template_hash:
        template = SimpleNamespace(content_hash=judge.template_hash, version=judge.template_version)
        version = f"{judge.template_version or 'unversioned'} #{version_key(template, judge.model, judge.params)[:8]}"
    params = judge.params or {}
    provider = str(params.get("provider") or "")
    if not provider and params.get("base_url"):
        provider = urlsplit(str(params["base_url"])).netloc
    return JudgeInfo(judge.name, version, judge.model, provider, judge.template_hash)


def _judges(pks: Iterable[int], cache: dict[int, JudgeInfo]) -> dict[int, JudgeInfo]:
    missing = set(pks) - set(cache)
    for judge in Judge.objects.filter(pk__in=missing):
        cache[judge.pk] = judge_info(judge)
    return cache


def _chunks(queryset, after: int | None, limit: int | None) -> Iterator[list]:
    """``queryset`` (of dicts with ``pk``) in pk order after ``after``, ``CHUNK`` rows at a time, ``limit`` in all."""
    left = limit
    while left is None or left > 0:
        size = CHUNK if left is None else min(CHUNK, left)
        rows = list((queryset.filter(pk__gt=after) if after is not None else queryset).order_by("pk")[:size])
        if not rows:
            return
        yield rows
        after = rows[-1]["pk"]
        left = None if left is None else left - len(rows)
        if len(rows) < size:
            return


def _statuses(batch: Batch, keys: set[tuple[int, int, int | None]]) -> dict[tuple[int, int, int | None], str]:
    """(judge pk, item pk, enhanced pk or None) → status of the call of sample 0."""
    items = {item for _, item, _ in keys}
    return {
        (j, i, e): s
        for j, i, e, s in JudgeCall.objects.filter(item__batch=batch, item__in=items, sample=0).values_list(
            "judge", "item", "enhanced", "status"
        )
    }


# ------------------------------------------------------------------ judge_scores


def judge_score_rows(
    *, batch: Batch, after: tuple[int, int] | None = None, limit: int | None = None
) -> Iterator[tuple[tuple[int, int], dict[str, Any]]]:
    """(cursor, row) for every judge score of ``batch``: the kept scores (sample 0, part 0 of the cursor),
    then the repeats of ``--samples`` (part 1; one row per dimension of each call). ``limit`` counts
    scores and calls."""
    part, last = after if after is not None else (0, None)
    judges: dict[int, JudgeInfo] = {}
    left = limit
    if part == 0:
        scores = JudgeScore.objects.filter(item__batch=batch).values(
            "pk",
            "judge",
            "item",
            "item__item_id",
            "item__system_id",
            "item__prompt_id",
            "dimension",
            "raw_value",
            "value",
            "reason",
            "scale_min",
            "scale_max",
            "higher_is_better",
            "weighted_value",
            "confidence",
        )
        for chunk in _chunks(scores, last, left):
            _judges({s["judge"] for s in chunk}, judges)
            status = _statuses(batch, {(s["judge"], s["item"], None) for s in chunk})
            for s in chunk:
                yield (
                    (0, s["pk"]),
                    _score_row(s, judges[s["judge"]], 0, status.get((s["judge"], s["item"], None), IMPORTED)),
                )
            left = None if left is None else left - len(chunk)
        last = None
    if left is not None and left <= 0:
        return
    calls = JudgeCall.objects.filter(item__batch=batch, enhanced__isnull=True, sample__gt=0).values(
        "pk",
        "judge",
        "item",
        "item__item_id",
        "item__system_id",
        "item__prompt_id",
        "sample",
        "status",
        "parsed",
    )
    for chunk in _chunks(calls, last, left):
        _judges({c["judge"] for c in chunk}, judges)
        for c in chunk:
            for dimension, s in (c["parsed"] or {}).get("scores", {}).items():
                yield (
                    (1, c["pk"]),
                    _score_row(
                        {
                            **c,
                            "dimension": dimension,
                            "raw_value": s.get("raw"),
                            "value": s.get("value"),
                            "reason": s.get("reason", ""),
                            "scale_min": None,
                            "scale_max": None,
                            "higher_is_better": None,
                            "weighted_value": (s.get("distribution") or {}).get("weighted_value"),
                            "confidence": (s.get("distribution") or {}).get("confidence"),
                        },
                        judges[c["judge"]],
                        c["sample"],
                        c["status"],
                    ),
                )


def _score_row(s: dict[str, Any], judge: JudgeInfo, sample: int, status: str) -> dict[str, Any]:
    return {
        "item_id": s["item__item_id"],
        "system_id": s["item__system_id"],
        "judge": judge.name,
        "judge_version": judge.version,
        "dimension": s["dimension"],
        "raw_value": s["raw_value"],
        "value": s["value"],
        "reason": s["reason"],
        "model": judge.model,
        "provider": judge.provider,
        "template_hash": judge.template_hash,
        "sample": sample,
        "call_status": status,
        "prompt_id": s["item__prompt_id"],
        "scale_min": s["scale_min"],
        "scale_max": s["scale_max"],
        "higher_is_better": s["higher_is_better"],
        "logprob_score": s["weighted_value"],
        "confidence": s["confidence"],
    }


def judge_scores_csv(*, batch: Batch) -> Iterator[str]:
    """``judge_scores.csv``: one row per judge × item × dimension × sample (formula-defused)."""
    return csv_lines(
        JUDGE_SCORES_COLUMNS,
        ([row[c] for c in JUDGE_SCORES_COLUMNS] for _, row in judge_score_rows(batch=batch)),
    )


# ------------------------------------------------------------------ pairwise_verdicts


def criteria_of(batch: Batch) -> list[str]:
    """The pairwise criteria scored in ``batch`` (the columns after ``confidence``), sorted."""
    return sorted(
        set(
            JudgeCriterionScore.objects.filter(item__batch=batch, enhanced__isnull=False)
            .values_list("criterion", flat=True)
            .distinct()
        )
    )


def pairwise_verdict_rows(
    *, batch: Batch, after: int | None = None, limit: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(cursor, row) for every counted pairwise verdict of ``batch``, in the run's orientation.

    ``baseline_system``/``enhanced_system`` and ``winner`` are the run's (``--baseline-system`` ...), also
    for the call of ``--swap`` that showed the enhanced response first (``order_sent`` says which went
    first; ``winner_shown`` is the position the judge named). ``criteria`` holds the judge's own criterion
    scores (raw, on its scale) for that call.
    """
    judges: dict[int, JudgeInfo] = {}
    verdicts = counted_verdicts(batch=batch).values(
        "pk",
        "judge",
        "baseline",
        "enhanced",
        "baseline__item_id",
        "enhanced__item_id",
        "baseline__system_id",
        "enhanced__system_id",
        "baseline__prompt_id",
        "winner",
        "confidence",
        "baseline_score",
        "enhanced_score",
        "reason",
        "swapped",
    )
    for chunk in _chunks(verdicts, after, limit):
        _judges({v["judge"] for v in chunk}, judges)
        keys = {(v["judge"], v["baseline"], v["enhanced"]) for v in chunk}
        status = _statuses(batch, keys)
        criteria: dict[tuple[int, int, int], dict[str, float]] = {}
        for judge, item, enhanced, name, raw in JudgeCriterionScore.objects.filter(
            item__in={k[1] for k in keys}, enhanced__isnull=False
        ).values_list("judge", "item", "enhanced", "criterion", "raw_value"):
            criteria.setdefault((judge, item, enhanced), {})[name] = raw
        for v in chunk:
            yield (
                v["pk"],
                _verdict_row(
                    v,
                    judges[v["judge"]],
                    criteria.get((v["judge"], v["baseline"], v["enhanced"]), {}),
                    status.get((v["judge"], v["baseline"], v["enhanced"]), IMPORTED),
                ),
            )


def _verdict_row(
    v: dict[str, Any], judge: JudgeInfo, criteria: dict[str, float], status: str
) -> dict[str, Any]:
    first, second = ("baseline", "enhanced")
    if v["swapped"]:  # the enhanced system's response was shown first
        first, second = second, first
    shown = {"baseline": "first", "enhanced": "second", "tie": "tie"}[v["winner"]]
    winner = {"baseline": first, "enhanced": second, "tie": "tie"}[v["winner"]]
    scores = {first: v["baseline_score"], second: v["enhanced_score"]}
    items = {
        first: (v["baseline__item_id"], v["baseline__system_id"]),
        second: (v["enhanced__item_id"], v["enhanced__system_id"]),
    }
    return {
        "prompt_id": v["baseline__prompt_id"],
        "baseline_system": items["baseline"][1],
        "enhanced_system": items["enhanced"][1],
        "order_sent": "enhanced_first" if v["swapped"] else "baseline_first",
        "winner": winner,
        "confidence": v["confidence"],
        "criteria": criteria,
        "judge": judge.name,
        "judge_version": judge.version,
        "baseline_item_id": items["baseline"][0],
        "enhanced_item_id": items["enhanced"][0],
        "winner_shown": shown,
        "baseline_score": scores["baseline"],
        "enhanced_score": scores["enhanced"],
        "reason": v["reason"],
        "model": judge.model,
        "provider": judge.provider,
        "template_hash": judge.template_hash,
        "call_status": status,
    }


def pairwise_verdicts_csv(*, batch: Batch) -> Iterator[str]:
    """``pairwise_verdicts.csv``: one row per verdict; a ``criterion_<name>`` column per criterion scored."""
    names = criteria_of(batch)
    header = [*PAIRWISE_FIRST_COLUMNS, *(f"criterion_{n}" for n in names), *PAIRWISE_LAST_COLUMNS]
    rows = (
        [
            *(row[c] for c in PAIRWISE_FIRST_COLUMNS),
            *(row["criteria"].get(n) for n in names),
            *(row[c] for c in PAIRWISE_LAST_COLUMNS),
        ]
        for _, row in pairwise_verdict_rows(batch=batch)
    )
    return csv_lines(header, rows)


# ------------------------------------------------------------------ judge_calls.jsonl


def prompt_hash(prompt: Any) -> str:
    """sha256 of the rendered messages as sent (JSON, keys sorted): equal prompts, equal hashes."""
    return hashlib.sha256(json.dumps(prompt, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def output_mode(request: dict[str, Any], stored: str) -> str | None:
    """How the answer was asked for: ``logprobs`` (the score token's distribution was asked for, G-Eval),
    else ``json_schema`` or ``text`` as recorded; None for a call saved before either was recorded."""
    if request.get("logprobs"):
        return "logprobs"
    return stored or None


def sent_parameters(request: dict[str, Any]) -> dict[str, Any]:
    """The parameters that bound and shape an answer, as the request carried them: the JSON schema asked
    for, the logprobs asked for (alternatives per token, or 0), and ``max_tokens`` (under either name)."""
    schema = request.get("response_format")
    return {
        "schema": schema.get("json_schema", schema) if isinstance(schema, dict) else None,
        "logprobs": int(request.get("top_logprobs") or 0) if request.get("logprobs") else 0,
        "max_tokens": request.get("max_tokens", request.get("max_completion_tokens")),
    }


# The columns of a judge_calls.jsonl line, read in one query per chunk.
_CALL_FIELDS = (
    "pk",
    "judge",
    "item__item_id",
    "item__system_id",
    "enhanced__item_id",
    "sample",
    "status",
    "template_name",
    "template_version",
    "template_hash",
    "model",
    "params",
    "prompt",
    "raw_output",
    "parsed",
    "error",
    "http_status",
    "tokens_in",
    "tokens_out",
    "latency_ms",
    "attempts",
    "created_at",
    "cached",
    "superseded",
    "output_mode",
    "request",
    "provider_batch",
    "cost",
    "currency",
)


def judge_calls_jsonl(*, batch: Batch) -> Iterator[str]:
    """``judge_calls.jsonl``: one JSON object per call, in the order the calls were saved, the paid calls a
    rerun superseded included (``superseded``): the sum of ``cost`` over the rows with ``cached`` false is
    what the calls cost."""
    judges: dict[int, JudgeInfo] = {}
    calls = JudgeCall.ledger.filter(item__batch=batch).values(*_CALL_FIELDS)
    for chunk in _chunks(calls, None, None):
        _judges({c["judge"] for c in chunk}, judges)
        yield "".join(
            json.dumps(_call_line(c, judges[c["judge"]]), ensure_ascii=False, allow_nan=False) + "\n"
            for c in chunk
        )


def _call_line(c: dict, judge: JudgeInfo) -> dict:
    """One call's line of ``judge_calls.jsonl``, from its row of ``_CALL_FIELDS``."""
    return {
        "judge": judge.name,
        "judge_version": judge.version,
        "item_id": c["item__item_id"],
        "system_id": c["item__system_id"],
        "enhanced_item_id": c["enhanced__item_id"],
        "sample": c["sample"],
        "status": c["status"],
        "parse_status": _parse_status(c["status"]),
        "error": c["error"],
        "prompt_sha256": prompt_hash(c["prompt"]),
        "raw_output": c["raw_output"],
        "parsed": c["parsed"],
        "http_status": c["http_status"],
        "tokens_in": c["tokens_in"],
        "tokens_out": c["tokens_out"],
        "latency_ms": c["latency_ms"],
        "attempts": c["attempts"],
        "model": c["model"],
        "provider": judge.provider,
        "template_name": c["template_name"],
        "template_version": c["template_version"],
        "template_hash": c["template_hash"],
        "params": safe_params(c["params"]),
        "created_at": c["created_at"].isoformat(),
        "cached": c["cached"],
        "superseded": c["superseded"],
        "output_mode": output_mode(c["request"] or {}, c["output_mode"]),
        **sent_parameters(c["request"] or {}),
        "provider_batch": c["provider_batch"] or None,
        "cost": c["cost"],
        "currency": c["currency"] or None,
    }


def _parse_status(status: str) -> str:
    """Whether the answer was read: ``parsed``, ``unreadable`` or ``ambiguous`` (raw output kept, the reason in
    ``error``), or ``no_answer`` (the call failed)."""
    read = {JudgeCall.OK: "parsed", JudgeCall.UNREADABLE: "unreadable", JudgeCall.AMBIGUOUS: "ambiguous"}
    return read.get(status, "no_answer")
