"""python manage.py run_judge BATCH --template NAME --base-url URL --model NAME [--show-prompt N]

Exit status: 0 when every call was scored; 1 when a call failed or its answer was unreadable or ambiguous,
or the run could not go on; 3 when it stopped starting calls at --max-cost;
130 after Ctrl-C and 143 after SIGTERM (128 + the signal), the calls finished before it saved.
"""

from __future__ import annotations

import os
import signal
import threading

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotator.judges.engine.budget import CAP_MAX_TOKENS, estimate_lines
from annotator.judges.engine.client import ChatClient, JudgeRunFatal
from annotator.judges.engine.pairwise import pair_tasks
from annotator.judges.engine.progress import DEFAULT_CURRENCY, Prices, RunProgress, currency_code
from annotator.judges.engine.runner import (
    batch_items,
    calibration_only,
    judge_run,
    judge_run_estimate,
    render_items,
)
from annotator.judges.engine.templates import (
    TemplateError,
    available_templates,
    load_template,
)
from annotator.judges.providers import JUDGE_PROVIDERS, UnknownProvider, client_for, provider_named
from annotator.judges.services.juries import jury_create, jury_members
from annotator.models import Batch
from annotator.uploads.files.errors import ImportRefused

MAX_SAMPLES = 20
EXIT_FAILED = 1
EXIT_CAPPED = 3  # stopped starting calls at --max-cost
EXIT_SIGNAL = {signal.SIGINT: 130, signal.SIGTERM: 143}  # the shell's 128 + signal number


class Command(BaseCommand):
    help = (
        "Score a batch with an LLM judge: any OpenAI-compatible /chat/completions endpoint, or Anthropic's Messages "
        "API (--provider anthropic). Every call is "
        "saved as it completes; a rerun calls only what is missing. Ctrl-C or SIGTERM stops new calls at once. "
        f"Shipped templates: {', '.join(available_templates())}."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name")
        parser.add_argument(
            "--template",
            help="template name under fixtures/judge_templates/, or a path (required unless --jury)",
        )
        parser.add_argument(
            "--jury",
            metavar="J1,J2,...",
            help="score the batch with a jury of judges already run on it (their mean score, majority "
            "verdict), saved as the judge --judge (default jury:J1+J2); or the name of a saved "
            "jury. Calls nothing.",
        )
        parser.add_argument(
            "--provider",
            default="openai",
            help=f"judge provider, one of: {', '.join(JUDGE_PROVIDERS)} (default openai)",
        )
        parser.add_argument(
            "--base-url",
            help="e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1 "
            "(anthropic: default https://api.anthropic.com)",
        )
        parser.add_argument("--model")
        parser.add_argument("--judge", default="", help="judge name (default: TEMPLATE/MODEL)")
        parser.add_argument(
            "--api-key-env",
            default=None,
            help="environment variable holding the API key (default: OPENAI_API_KEY, or "
            "ANTHROPIC_API_KEY with --provider anthropic)",
        )
        parser.add_argument(
            "--concurrency", type=int, default=8, help="requests in flight at once (default 8)"
        )
        parser.add_argument(
            "--max-retries", type=int, default=4, help="retries on 429, 5xx, connection errors, bad bodies"
        )
        parser.add_argument(
            "--backoff",
            type=float,
            default=1.0,
            help="ceiling of the first retry's random wait, seconds (doubles)",
        )
        parser.add_argument(
            "--timeout", type=float, default=60.0, help="deadline for each whole request, seconds"
        )
        parser.add_argument("--temperature", type=float, default=0.0)
        parser.add_argument(
            "--max-tokens",
            type=int,
            default=None,
            help=f"the most output tokens a call may be charged for (with --max-cost and none given: {CAP_MAX_TOKENS})",
        )
        parser.add_argument("--limit", type=int, default=None, help="only the first N items")
        parser.add_argument(
            "--retry-failed",
            action="store_true",
            help="call again the items whose call failed or whose answer was unreadable or ambiguous",
        )
        parser.add_argument(
            "--retry-unknown",
            action="store_true",
            help="call again the calls a killed run sent whose outcome is unknown (they may be paid twice)",
        )
        parser.add_argument(
            "--no-structured",
            action="store_true",
            help="ask for free text instead of the template's JSON schema (response_format)",
        )
        parser.add_argument(
            "--no-logprobs", action="store_true", help="do not ask for the score token's logprobs"
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="call every item again, replacing its saved call "
            "(identical requests are still served from the cache)",
        )
        parser.add_argument(
            "--no-cache",
            action="store_true",
            help="pay for every call, even one identical to a request already answered",
        )
        parser.add_argument(
            "--pairwise", action="store_true", help="one call per prompt_id: baseline vs enhanced system"
        )
        parser.add_argument(
            "--baseline-system", default="", help="system_id of the baseline responses (with --pairwise)"
        )
        parser.add_argument(
            "--enhanced-system", default="", help="system_id of the enhanced responses (with --pairwise)"
        )
        parser.add_argument(
            "--swap",
            action="store_true",
            help="with --pairwise: run each pair in both orders too (the position-swap probe)",
        )
        parser.add_argument(
            "--samples",
            type=int,
            default=1,
            metavar="N",
            help="call every item N times (needs --temperature > 0): the judge's self-consistency",
        )
        parser.add_argument(
            "--calibration-set",
            action="store_true",
            help="call only the items of the batch's frozen calibration set (see calibration_set)",
        )
        parser.add_argument(
            "--show-prompt",
            type=int,
            default=0,
            metavar="N",
            help="print N rendered prompts and call nothing",
        )
        parser.add_argument(
            "--price-in",
            type=float,
            default=0.0,
            help="price per million input tokens, for the cost estimate",
        )
        parser.add_argument("--price-out", type=float, default=0.0, help="price per million output tokens")
        parser.add_argument(
            "--prices",
            help='JSON file {"MODEL": {"input": 2.5, "output": 10, "currency": "USD"}} per million tokens',
        )
        parser.add_argument(
            "--currency",
            default=DEFAULT_CURRENCY,
            help="the currency of the prices and of --max-cost, shown with every cost (default USD)",
        )
        parser.add_argument(
            "--batch",
            action="store_true",
            dest="batch_api",
            help="send the calls through the provider's batch API (about half the price; answers "
            "within 24 h); a rerun with --batch fetches a batch an earlier run left waiting",
        )
        parser.add_argument(
            "--batch-poll",
            type=float,
            default=30.0,
            metavar="SECONDS",
            help="how often --batch asks whether the batch has ended (default 30)",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print the calls, estimated tokens and cost (with prices), and call nothing",
        )
        parser.add_argument(
            "--max-cost",
            type=float,
            default=None,
            metavar="USD",
            help="keep this run's spend within USD: calls in flight are reserved at --max-tokens, so the spend "
            "passes it by at most one call's output (needs --price-in/--price-out or --prices)",
        )

    def handle(self, *args, **o):
        if o["jury"]:
            return self._jury(o)
        if not o["template"]:
            raise CommandError(
                "--template is required to run a judge (or --jury to combine judges already run)."
            )
        try:
            template = load_template(o["template"])
        except TemplateError as exc:
            raise CommandError(f"--template: {exc}") from None
        batch = Batch.objects.filter(name=o["batch"]).first()
        if batch is None:
            raise CommandError(f"there is no batch named \u201c{o['batch']}\u201d.")
        pairwise = None
        if o["pairwise"]:
            if (
                not o["baseline_system"]
                or not o["enhanced_system"]
                or o["baseline_system"] == o["enhanced_system"]
            ):
                raise CommandError(
                    "--pairwise needs two different systems: --baseline-system A --enhanced-system B."
                )
            pairwise = (o["baseline_system"], o["enhanced_system"])
        elif o["swap"]:
            raise CommandError(
                "--swap runs each pair in both orders: add --pairwise --baseline-system A --enhanced-system B."
            )
        for warning in template.scale_warnings:
            self.stderr.write(
                self.style.WARNING(
                    f"Scale conflict in {template.name}: {warning}. Scores are read on the declared scale; check the "
                    "direction before trusting them."
                )
            )
        try:
            provider = provider_named(o["provider"])
        except UnknownProvider as exc:
            raise CommandError(f"--provider: {exc}.") from None
        if o["show_prompt"]:
            return self._show(batch, template, o["show_prompt"], pairwise, o["swap"], o["calibration_set"])
        if not (o["base_url"] or provider.base_url) or not o["model"]:
            raise CommandError(
                "--base-url and --model are required to run a judge (only --show-prompt runs without)."
            )
        if not 1 <= o["samples"] <= MAX_SAMPLES:
            raise CommandError(f"--samples must be between 1 and {MAX_SAMPLES}.")
        if o["samples"] > 1 and o["temperature"] <= 0:
            raise CommandError(
                "--samples N repeats each call to measure the judge's noise: it needs --temperature > 0."
            )
        if not 1 <= o["concurrency"] <= 64:
            raise CommandError("--concurrency must be between 1 and 64.")
        if o["batch_poll"] <= 0:
            raise CommandError("--batch-poll must be a positive number of seconds.")
        if o["timeout"] <= 0 or o["max_retries"] < 0:
            raise CommandError("--timeout must be positive and --max-retries at least 0.")
        try:
            currency = currency_code(o["currency"])
        except ValueError as exc:
            raise CommandError(f"--currency: {exc}") from None
        prices = Prices(o["price_in"], o["price_out"], currency)
        if o["prices"]:
            try:
                prices = Prices.from_file(o["prices"], o["model"], currency)
            except ValueError as exc:
                raise CommandError(f"--prices: {exc}") from None
        if o["max_cost"] is not None and (o["max_cost"] <= 0 or not prices.known):
            raise CommandError(
                "--max-cost needs a positive amount and prices to estimate with: "
                "--price-in/--price-out or --prices FILE."
            )
        if o["dry_run"]:
            return self._dry_run(batch, template, client_for(o), prices, o, pairwise)
        key_env = o["api_key_env"] or provider.key_env
        api_key = os.environ.get(key_env, "")
        # A local OpenAI-compatible server (vLLM, Ollama) needs no key; a named variable or a hosted API does.
        if not api_key and (
            o["api_key_env"] or provider.base_url or "api.openai.com" in (o["base_url"] or "")
        ):
            raise CommandError(
                f"the API key variable {key_env} is not set (or empty); nothing was called. "
                f"Set it, or name another with --api-key-env."
            )
        client = client_for(o, api_key=api_key)
        bar = tqdm(
            total=0, unit="call", file=getattr(self.stderr, "_out", None), dynamic_ncols=True, leave=True
        )
        self.signalled = None
        restore = self._install_stop(client)
        try:
            result = judge_run(
                batch=batch,
                template=template,
                client=client,
                judge_name=o["judge"] or f"{template.name}/{o['model']}",
                concurrency=o["concurrency"],
                limit=o["limit"],
                retry_failed=o["retry_failed"],
                retry_unknown=o["retry_unknown"],
                force=o["force"],
                pairwise=pairwise,
                swap=o["swap"],
                samples=o["samples"],
                calibration_set=o["calibration_set"],
                structured=not o["no_structured"],
                logprobs=not o["no_logprobs"],
                prices=prices,
                progress=lambda state: self._progress(bar, state),
                cache=not o["no_cache"],
                max_cost=o["max_cost"],
                batch_api=o["batch_api"],
                poll_seconds=o["batch_poll"],
            )
        except (TemplateError, ImportRefused) as exc:
            raise CommandError(str(exc)) from None
        except JudgeRunFatal as exc:
            raise CommandError(f"the run stopped: {exc}. Calls finished before it are saved.") from None
        finally:
            restore()
            bar.close()
            client.close()
        self._report(result, template)
        if result.stopped and self.signalled in EXIT_SIGNAL:
            name = "Ctrl-C" if self.signalled == signal.SIGINT else "SIGTERM"
            raise CommandError(
                f"stopped by {name}; the calls finished before it are saved.",
                returncode=EXIT_SIGNAL[self.signalled],
            )
        if result.failures:
            raise CommandError(
                f"{len(result.failures)} call(s) failed or were unreadable (listed above).",
                returncode=EXIT_FAILED,
            )
        if result.capped:
            raise CommandError(
                f"stopped at --max-cost {o['max_cost']:g}; the calls paid for are saved, and a rerun "
                "continues with the calls left.",
                returncode=EXIT_CAPPED,
            )

    def _jury(self, o) -> None:
        batch = Batch.objects.filter(name=o["batch"]).first()
        if batch is None:
            raise CommandError(f"there is no batch named “{o['batch']}”.")
        names = o["jury"].split(",")
        saved = o["judge"] or (names[0].strip() if len(names) == 1 else "")
        try:
            jury, n_scores, n_verdicts = jury_create(
                batch=batch, members=jury_members(names=names), name=saved
            )
        except ImportRefused as exc:
            raise CommandError(f"--jury: {exc}") from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Jury “{jury.name}” of {', '.join(jury.params['jury'])} on “{batch.name}”: "
                f"{n_scores} mean score(s), {n_verdicts} majority verdict(s); 0 calls. Its judge card compares it with "
                f"its best member."
            )
        )

    def _dry_run(self, batch, template, client, prices: Prices, o, pairwise) -> None:
        try:
            guess = judge_run_estimate(
                batch=batch,
                template=template,
                client=client,
                prices=prices,
                cache=not o["no_cache"],
                max_cost=o["max_cost"],
                limit=o["limit"],
                pairwise=pairwise,
                swap=o["swap"],
                samples=o["samples"],
                calibration_set=o["calibration_set"],
                structured=not o["no_structured"],
                logprobs=not o["no_logprobs"],
            )
        except TemplateError as exc:
            raise CommandError(str(exc)) from None
        for line in estimate_lines(guess):
            self.stdout.write(line)

    def _show(
        self, batch, template, n: int, pairwise, swap: bool = False, calibration_set: bool = False
    ) -> None:
        try:
            only = calibration_only(batch) if calibration_set else None
            if pairwise:
                tasks = pair_tasks(batch, template, *pairwise, limit=n, swap=swap, only=only)[0]
            else:
                tasks = render_items(batch_items(batch, n, only), template, batch.rubric_obj)
        except TemplateError as exc:
            raise CommandError(str(exc)) from None
        for task in tasks:
            pair = f" vs {task.enhanced.item_id}" if task.enhanced else ""
            self.stdout.write(f"===== item {task.item.item_id}{pair} =====")
            for message in task.messages:
                self.stdout.write(f"--- {message['role']} ---\n{message['content']}")

    def _install_stop(self, client: ChatClient):
        """First Ctrl-C or SIGTERM: no new calls. A second one also drops the calls in flight."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

        def handler(signum, frame):
            self.signalled = self.signalled or signum
            if client.stop.is_set():
                client.close()
                return
            client.stop.set()
            self.stderr.write(
                "\nStopping: no new calls; calls in flight finish and are saved (again to drop them)."
            )

        for sig in previous:
            signal.signal(sig, handler)
        return lambda: [signal.signal(sig, h) for sig, h in previous.items()]

    def _progress(self, bar, state: RunProgress) -> None:
        if bar.total != state.total:
            bar.reset(total=state.total)
        bar.update(state.done - bar.n)
        postfix = (
            f"failed {state.failed}, retries {state.retries}, tokens {state.tokens_in:,}/{state.tokens_out:,}, "
            f"cached {state.cached}"
        )
        if state.prices.known:
            postfix += f", cost ~{state.prices.show(state.cost)}"
        bar.set_postfix_str(postfix, refresh=True)

    def _report(self, result, template) -> None:
        state = result.progress
        if result.note:
            self.stdout.write(self.style.WARNING(result.note))
        verb = "stopped early" if result.stopped else "done"
        self.stdout.write(
            self.style.SUCCESS(
                f"Judge \u201c{result.judge.name}\u201d ({template.scale.label}), {verb}: {state.summary()}; "
                f"{state.skipped} item(s) already called were skipped."
            )
        )
        if result.stopped:
            self.stdout.write("Run the same command again to call the items that are left.")
        if result.unknown:
            shown = ", ".join(result.unknown[:10]) + (
                f" and {len(result.unknown) - 10} more" if len(result.unknown) > 10 else ""
            )
            self.stdout.write(
                self.style.WARNING(
                    f"{len(result.unknown)} call(s) sent, outcome unknown (a run was killed while they were in flight; "
                    f"they may have been paid): {shown}. They were not called again; rerun with --retry-unknown to call them."
                )
            )
        for item_id, error in result.failures:
            self.stdout.write(f"  FAILED {item_id}: {error}")
        if result.failures:
            self.stdout.write("Rerun with --retry-failed to call the failed items again.")
