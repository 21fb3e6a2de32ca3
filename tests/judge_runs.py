"""``manage.py run_judge`` against the fake judge (``tests.fake_judge``), as the judge tests run it: the
reference-answer template, a backoff short enough for tests, then the test's own options."""

from __future__ import annotations

from django.core.management import call_command

RULE = "hub_answer_correctness"


def run_judge(fake, batch: str, *extra: str, template: str = RULE, model: str | None = "fake-1") -> None:
    """``model`` None leaves ``--model`` to ``extra``."""
    model_args = ("--model", model) if model is not None else ()
    call_command(
        "run_judge",
        batch,
        "--template",
        template,
        "--base-url",
        fake.url,
        *model_args,
        "--backoff",
        "0.01",
        *extra,
    )
