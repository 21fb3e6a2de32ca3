"""``manage.py run_judge`` against the fake judge (``tests.fake_judge``), as the judge tests run it: the
reference-answer template, a backoff short enough for tests, then the test's own options."""

from __future__ import annotations

from django.core.management import call_command

RULE = "hub_answer_correctness"


def run_judge(
    fake, batch: str, *extra: str, template: str = RULE, model: str = "fake-1", url: str | None = None
) -> None:
    """``url``: another endpoint than the fake's own (the same judge elsewhere)."""
    call_command(
        "run_judge",
        batch,
        "--template",
        template,
        "--base-url",
        url or fake.url,
        "--model",
        model,
        "--backoff",
        "0.01",
        *extra,
    )
