"""python manage.py run_judge BATCH --template NAME --base-url URL --model NAME"""

from __future__ import annotations

import os
import sys

from django.core.management.base import BaseCommand, CommandError

from annotator.imports.errors import ImportRefused
from annotator.judging.client import ChatClient
from annotator.judging.runner import judge_run
from annotator.judging.templates import (
    TemplateError,
    available_templates,
    load_template,
)
from annotator.models import Batch


class Command(BaseCommand):
    help = (
        "Score a batch with an LLM judge behind any OpenAI-compatible /chat/completions endpoint. "
        f"Shipped templates: {', '.join(available_templates())}."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name")
        parser.add_argument("--template", required=True, help="template name under fixtures/judge_templates/, or a path")
        parser.add_argument("--base-url", required=True, help="e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1")
        parser.add_argument("--model", required=True)
        parser.add_argument("--judge", default="", help="judge name (default: TEMPLATE/MODEL)")
        parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
        parser.add_argument("--concurrency", type=int, default=4, help="requests in flight at once")
        parser.add_argument("--max-retries", type=int, default=4, help="retries on 429, 5xx and connection errors")
        parser.add_argument("--backoff", type=float, default=1.0, help="seconds before the first retry (doubles)")
        parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
        parser.add_argument("--limit", type=int, default=None, help="only the first N items")

    def handle(self, *args, batch, template, base_url, model, judge, api_key_env, concurrency, max_retries,
               backoff, timeout, limit, **options):
        if concurrency < 1 or concurrency > 64:
            raise CommandError("--concurrency must be between 1 and 64.")
        try:
            tmpl = load_template(template)
        except TemplateError as exc:
            raise CommandError(f"--template: {exc}") from None
        batch_obj = Batch.objects.filter(name=batch).first()
        if batch_obj is None:
            raise CommandError(f"there is no batch named \u201c{batch}\u201d.")
        client = ChatClient(
            base_url=base_url, model=model, api_key=os.environ.get(api_key_env, ""),
            timeout=timeout, max_retries=max_retries, backoff=backoff,
        )
        try:
            result = judge_run(
                batch=batch_obj, template=tmpl, client=client, judge_name=judge or f"{tmpl.name}/{model}",
                concurrency=concurrency, limit=limit, progress=self._progress,
            )
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write("")
        self.stdout.write(
            self.style.SUCCESS(
                f"Judge \u201c{result.judge.name}\u201d: {result.n_scores} scores on {result.n_items} items "
                f"({tmpl.scale.label}); {result.retries} retries; {len(result.failures)} failure(s)."
            )
        )
        for failure in result.failures:
            where = f"{failure.item.item_id}" + (f" [{failure.dimension}]" if failure.dimension else "")
            self.stdout.write(f"  FAILED {where}: {failure.error}")

    def _progress(self, done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        self.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", ending="")
        if hasattr(sys.stderr, "flush"):
            self.stderr.flush()
