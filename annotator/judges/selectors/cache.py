"""Reads of the response cache: the newest scored call for each request key."""

from __future__ import annotations

from django.db.models import Avg

from annotator.models import JudgeCall

CHUNK = 500  # keys per query: well under SQLite's bound-variable limit


def judge_calls_cached(*, keys: list[str]) -> dict[str, JudgeCall]:
    """request key → the newest scored (status ok) call made with it, for the keys that have one."""
    found: dict[str, JudgeCall] = {}
    wanted = sorted(set(filter(None, keys)))
    for start in range(0, len(wanted), CHUNK):
        rows = (
            JudgeCall.objects.filter(request_key__in=wanted[start : start + CHUNK], status=JudgeCall.OK)
            .only(
                "request_key",
                "raw_output",
                "parsed",
                "template_hash",
                "tokens_in",
                "tokens_out",
                "params",
                "output_mode",
                "request",
                "http_status",
            )
            .order_by("request_key", "-created_at", "-pk")
        )
        for call in rows:
            found.setdefault(call.request_key, call)
    return found


def judge_output_tokens(*, model: str, template_hash: str) -> float | None:
    """The mean output tokens of ``model``'s paid, scored answers to the template with ``template_hash``."""
    return JudgeCall.objects.filter(
        model=model, template_hash=template_hash, status=JudgeCall.OK, cached=False, tokens_out__isnull=False
    ).aggregate(mean=Avg("tokens_out"))["mean"]
