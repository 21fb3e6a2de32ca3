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

from annotator.counted import counted
from annotator.judges.engine.budget import estimate_lines
from annotator.judges.engine.client import ChatClient, JudgeRunFatal
from annotator.judges.engine.options import COMMAND_FLAGS, RunOptions
from annotator.judges.engine.pairwise import pair_tasks
from annotator.judges.engine.planning import (
    batch_items,
    calibration_only,
    judge_run_estimate,
    render_items,
)
from annotator.judges.engine.progress import RunProgress
from annotator.judges.engine.runner import RunResult, judge_run
from annotator.judges.engine.templates import (
    JudgeTemplate,
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
        # Every other option is a run option (or one of the command's own), listed with its help in one table.
        for flag in COMMAND_FLAGS:
            flag.add_to(parser, providers=", ".join(JUDGE_PROVIDERS))

    def handle(self, *args, **o):
        if o["jury"]:
            return self._jury(o)
        template, batch = self._template_and_batch(o)
        pairwise = self._pairwise(o)
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
        options = self._options(o, provider)
        if o["dry_run"]:
            return self._dry_run(batch, template, client_for(options.client_params()), options)
        client = client_for(options.client_params(), api_key=self._api_key(options, provider))
        result = self._run(batch, template, options, client)
        self._report(result, template)
        self._exit_status(result, options)

    def _template_and_batch(self, o) -> tuple[JudgeTemplate, Batch]:
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
        return template, batch

    def _pairwise(self, o) -> tuple[str, str] | None:
        """(baseline system, enhanced system) of --pairwise; None without it."""
        if o["pairwise"]:
            if (
                not o["baseline_system"]
                or not o["enhanced_system"]
                or o["baseline_system"] == o["enhanced_system"]
            ):
                raise CommandError(
                    "--pairwise needs two different systems: --baseline-system A --enhanced-system B."
                )
            return (o["baseline_system"], o["enhanced_system"])
        if o["swap"]:
            raise CommandError(
                "--swap runs each pair in both orders: add --pairwise --baseline-system A --enhanced-system B."
            )
        return None

    def _options(self, o, provider) -> RunOptions:
        """The run's options, each checked; CommandError names the one at fault."""
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
            options = RunOptions.from_command_options(o)
        except ValueError as exc:  # the prices: --currency or --prices
            raise CommandError(str(exc)) from None
        if options.max_cost is not None and (options.max_cost <= 0 or not options.prices.known):
            raise CommandError(
                "--max-cost needs a positive amount and prices to estimate with: "
                "--price-in/--price-out or --prices FILE."
            )
        return options

    def _api_key(self, options: RunOptions, provider) -> str:
        """The key from --api-key-env (else the provider's variable); CommandError when a run needs one."""
        key_env = options.key_env or provider.key_env
        api_key = os.environ.get(key_env, "")
        # A local OpenAI-compatible server (vLLM, Ollama) needs no key; a named variable or a hosted API does.
        if not api_key and (options.key_env or provider.needs_key(options.base_url)):
            raise CommandError(
                f"the API key variable {key_env} is not set (or empty); nothing was called. "
                f"Set it, or name another with --api-key-env."
            )
        return api_key

    def _run(self, batch, template, options: RunOptions, client: ChatClient) -> RunResult:
        bar = tqdm(
            total=0, unit="call", file=getattr(self.stderr, "_out", None), dynamic_ncols=True, leave=True
        )
        self.signalled = None
        restore = self._install_stop(client)
        try:
            return judge_run(
                batch, template, options, client=client, progress=lambda state: self._progress(bar, state)
            )
        except (TemplateError, ImportRefused) as exc:
            raise CommandError(str(exc)) from None
        except JudgeRunFatal as exc:
            raise CommandError(f"the run stopped: {exc}. Calls finished before it are saved.") from None
        finally:
            restore()
            bar.close()
            client.close()

    def _exit_status(self, result: RunResult, options: RunOptions) -> None:
        """Raise the CommandError whose exit status says how the run ended (see the module's docstring)."""
        if result.stopped and self.signalled in EXIT_SIGNAL:
            name = "Ctrl-C" if self.signalled == signal.SIGINT else "SIGTERM"
            raise CommandError(
                f"stopped by {name}; the calls finished before it are saved.",
                returncode=EXIT_SIGNAL[self.signalled],
            )
        if result.failures:
            raise CommandError(
                f"{counted(len(result.failures), 'call', 'calls')} failed or came back unreadable (listed above).",
                returncode=EXIT_FAILED,
            )
        if result.capped:
            raise CommandError(
                f"stopped at --max-cost {options.max_cost:g}; the calls paid for are saved, and a rerun "
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
                f"{counted(n_scores, 'mean score', 'mean scores')}, {counted(n_verdicts, 'majority verdict', 'majority verdicts')}; 0 calls. Its judge card compares it with "
                f"its best member."
            )
        )

    def _dry_run(self, batch, template, client, options: RunOptions) -> None:
        try:
            guess = judge_run_estimate(batch, template, client, options)
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
                f"{counted(state.skipped, 'item', 'items')} already called {'was' if state.skipped == 1 else 'were'} skipped."
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
                    f"{counted(len(result.unknown), 'call', 'calls')} sent, outcome unknown (a run was killed while they were in flight; "
                    f"they may have been paid): {shown}. They were not called again; rerun with --retry-unknown to call them."
                )
            )
        for item_id, error in result.failures:
            self.stdout.write(f"  FAILED {item_id}: {error}")
        if result.failures:
            self.stdout.write("Rerun with --retry-failed to call the failed items again.")
