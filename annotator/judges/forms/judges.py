"""The judge import page's forms: judge scores, and pairwise verdicts."""

from __future__ import annotations

import unicodedata

from django import forms
from django.conf import settings

from annotator.judges.engine.budget import CAP_MAX_TOKENS
from annotator.judges.engine.options import DEFAULT_PROVIDER
from annotator.judges.engine.progress import DEFAULT_CURRENCY, currency_code
from annotator.judges.engine.templates import available_templates, load_template
from annotator.models import Batch, CalibrationSet, Judge
from annotator.uploads.forms import SizeCheckedFileField
from hcs.judge_output import JudgeScale, OutputSpec, parse_labels

MAX_SAMPLES = 20  # as run_judge --samples
DEFAULT_TEMPLATE = (
    "hcs_rubric"  # the Run a judge form's first choice: the app's own rubric, one response at a time
)
SCALES = [("0-1", "0.0 – 1.0"), ("1-4", "1 – 4"), ("1-5", "1 – 5")]


class _JudgeFileForm(forms.Form):
    batch = forms.ModelChoiceField(queryset=Batch.objects.order_by("name"), to_field_name="name")
    judge = forms.CharField(max_length=Judge._meta.get_field("name").max_length, label="Judge name")
    model = forms.CharField(max_length=200, required=False, label="Model (optional)")
    template = forms.CharField(max_length=200, required=False, label="Template (optional)")
    file = SizeCheckedFileField(help_text="CSV (UTF-8) or JSONL.")


class JudgeScoresForm(_JudgeFileForm):
    scale = forms.ChoiceField(choices=SCALES, label="The judge's raw scale")
    lower_is_better = forms.BooleanField(
        required=False,
        label="Lower is better",
        help_text="Tick for a judge whose low scores are the good end (e.g. a frustration score, or a "
        "template whose standard reads 1 = Excellent).",
    )

    verdict_key = forms.CharField(
        max_length=200,
        required=False,
        label="Verdict key (optional)",
        help_text="The key holding the score in raw_output, e.g. answer_match or hub_answer_correctness.",
    )
    labels = forms.CharField(
        max_length=1000,
        required=False,
        label="Verdict labels (optional)",
        help_text="For judges that answer with words: Excellent=4, Very Good=3, Good=2, Bad=1",
    )

    def clean_labels(self):
        try:
            return parse_labels(self.cleaned_data["labels"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def judge_scale(self) -> JudgeScale:
        return JudgeScale.parse(
            self.cleaned_data["scale"], higher_is_better=not self.cleaned_data["lower_is_better"]
        )

    def output_spec(self) -> OutputSpec:
        data = self.cleaned_data
        return OutputSpec(
            scale=self.judge_scale(), verdict_key=data["verdict_key"] or None, labels=data["labels"]
        )


class VerdictsForm(_JudgeFileForm):
    baseline_system = forms.CharField(
        max_length=200,
        required=False,
        label="Baseline system id",
        help_text="Needed when rows name the pair by prompt_id.",
    )


class JudgeRunForm(forms.Form):
    """Start a judge run in the background: the key is read by the worker from an allowed variable."""

    batch = forms.ModelChoiceField(queryset=Batch.objects.order_by("name"), to_field_name="name")
    template = forms.ChoiceField(
        choices=(), help_text="A template from fixtures/judge_templates/, run verbatim."
    )
    provider = forms.ChoiceField(choices=(), initial=DEFAULT_PROVIDER, required=False)
    base_url = forms.URLField(
        label="Base URL",
        assume_scheme="https",
        required=False,
        help_text="An OpenAI-compatible endpoint, e.g. https://api.openai.com/v1; for Anthropic, "
        "empty means https://api.anthropic.com",
    )
    model = forms.CharField(max_length=200)
    key_env = forms.ChoiceField(
        choices=(),
        label="API key variable",
        help_text="The worker reads the key from this environment variable; it is never stored.",
    )
    concurrency = forms.IntegerField(min_value=1, max_value=64, initial=8)
    retry_failed = forms.BooleanField(required=False, label="Call failed items again")
    retry_unknown = forms.BooleanField(
        required=False,
        label="Call again the calls whose outcome is unknown",
        help_text="Calls sent by a run that was killed mid-call; the endpoint may have charged for them already.",
    )
    calibration_set = forms.BooleanField(
        required=False,
        label="Only the batch's calibration set",
        help_text="Compare this judge version with earlier ones on the same frozen items.",
    )
    judge = forms.CharField(
        max_length=Judge._meta.get_field("name").max_length,
        required=False,
        label="Judge name (optional)",
        help_text="Default: TEMPLATE/MODEL.",
    )
    temperature = forms.FloatField(
        min_value=0,
        max_value=2,
        initial=0.0,
        required=False,
        help_text="0 for scores; above 0 with several samples to measure the judge's noise. "
        "A model that refuses 0 is called without it, and the run says so.",
    )
    samples = forms.IntegerField(
        min_value=1,
        max_value=MAX_SAMPLES,
        initial=1,
        required=False,
        label="Samples per item",
        help_text="Calls per item (needs a temperature above 0): the judge's self-consistency.",
    )
    pairwise = forms.BooleanField(
        required=False,
        label="Pairwise: baseline against enhanced system",
        help_text="For a pairwise template such as geval_pairwise: one call per prompt_id.",
    )
    baseline_system = forms.CharField(max_length=200, required=False, label="Baseline system id")
    enhanced_system = forms.CharField(max_length=200, required=False, label="Enhanced system id")
    swap = forms.BooleanField(
        required=False,
        label="Also in swapped order",
        help_text="Runs each pair in both orders: the position-swap probe.",
    )
    no_cache = forms.BooleanField(
        required=False,
        label="Pay for every call",
        help_text="Off: a request identical to one already answered is served from the stored call for free.",
    )
    price_in = forms.FloatField(
        min_value=0, required=False, label="Price per million input tokens (optional)"
    )
    price_out = forms.FloatField(
        min_value=0, required=False, label="Price per million output tokens (optional)"
    )
    currency = forms.CharField(
        max_length=8, required=False, initial="USD", help_text="The prices' currency, shown with every cost."
    )
    max_cost = forms.FloatField(
        min_value=0,
        required=False,
        label="Cost cap (optional)",
        help_text="Keeps the run's spend within this amount (needs prices): every call is sent max_tokens, "
        f"{CAP_MAX_TOKENS:,} unless given below, and each call in flight is reserved at that bound, so the "
        "spend passes the cap by at most one call's output.",
    )
    max_tokens = forms.IntegerField(
        min_value=1,
        required=False,
        label="Max tokens per answer (optional)",
        help_text=f"The most output tokens a call may be charged for; with a cost cap and none given, {CAP_MAX_TOKENS:,}.",
    )

    def clean(self):
        data = super().clean()
        batch = data.get("batch")
        if (
            data.get("calibration_set")
            and batch is not None
            and not CalibrationSet.objects.filter(batch=batch).exists()
        ):
            self.add_error(
                "calibration_set",
                f"Batch \u201c{batch.name}\u201d has no calibration set yet: mark one on its report.",
            )
        data["judge"] = (data.get("judge") or "").strip()
        data["provider"] = data.get("provider") or DEFAULT_PROVIDER
        if "base_url" in data and not data["base_url"]:
            from annotator.judges.providers import (
                JUDGE_PROVIDERS,  # the clients load httpx: rating workers never do
            )

            data["base_url"] = JUDGE_PROVIDERS[data["provider"]].base_url
            if not data["base_url"]:
                self.add_error("base_url", "Give the endpoint's base URL, e.g. https://api.openai.com/v1.")
        data["temperature"] = data.get("temperature") or 0.0
        data["samples"] = data.get("samples") or 1
        try:
            data["currency"] = currency_code(data.get("currency") or DEFAULT_CURRENCY)
        except ValueError as exc:
            self.add_error("currency", str(exc))
        if data.get("max_cost") is not None:
            if data["max_cost"] <= 0:
                self.add_error("max_cost", "Give a cap above 0, or leave it empty for no cap.")
            elif not (data.get("price_in") or data.get("price_out")):
                self.add_error(
                    "max_cost", "A cost cap needs the prices per million tokens to count the spend."
                )
        if any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in data["judge"]):
            self.add_error(
                "judge",
                "Use letters, digits, spaces and punctuation only (no control or invisible characters).",
            )
        template = self._templates.get(data.get("template"))
        pairwise, swap, samples = data.get("pairwise"), data.get("swap"), data.get("samples") or 1
        if template is not None and template.pairwise and not pairwise:
            self.add_error(
                "pairwise", f"{template.name} compares two responses: tick Pairwise and name both systems."
            )
        if template is not None and pairwise and not template.pairwise:
            self.add_error(
                "template",
                f"{template.name} scores one response at a time; a pairwise run needs a "
                "pairwise template such as geval_pairwise.",
            )
        if pairwise:
            for key in ("baseline_system", "enhanced_system"):
                data[key] = (data.get(key) or "").strip()
                if not data[key]:
                    self.add_error(key, "Name the system_id of the batch whose responses to compare.")
            if data.get("baseline_system") and data["baseline_system"] == data.get("enhanced_system"):
                self.add_error("enhanced_system", "Pick a system other than the baseline.")
            if samples > 1:
                self.add_error(
                    "samples", "Samples repeat the calls of a scoring template; a pairwise run takes 1."
                )
        elif swap:
            self.add_error("swap", "Swapped order applies to a pairwise run: tick Pairwise too.")
        if samples > 1 and not (data.get("temperature") or 0) > 0:
            self.add_error(
                "temperature", "Several samples measure the judge's noise: set a temperature above 0."
            )
        return data

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._templates = {t: load_template(t) for t in available_templates()}
        self.fields["template"].choices = [
            (t, f"{t} (pairwise)" if template.pairwise else t) for t, template in self._templates.items()
        ]
        # A scoring template first: a pairwise one needs two systems named and would refuse a plain run.
        scoring = [t for t, template in self._templates.items() if not template.pairwise]
        self.fields["template"].initial = (
            DEFAULT_TEMPLATE if DEFAULT_TEMPLATE in scoring else next(iter(scoring), None)
        )
        self.fields["key_env"].choices = [(k, k) for k in settings.ANNOTATOR_JUDGE_KEY_ENVS]
        from annotator.judges.providers import (
            JUDGE_PROVIDERS,  # the clients load httpx: rating workers never do
        )

        self.fields["provider"].choices = [(p.name, p.label) for p in JUDGE_PROVIDERS.values()]


class DisagreementFilterForm(forms.Form):
    """Filters of the "why it disagrees" page: one dimension and one system, among those the judge scored."""

    dimension = forms.ChoiceField(required=False)
    system = forms.ChoiceField(required=False)

    def __init__(self, data, *, dimensions: list[tuple[str, str]], systems: list[str]):
        super().__init__(data)
        self.fields["dimension"].choices = [("", "All dimensions"), *dimensions]
        self.fields["system"].choices = [("", "All systems"), *((s, s) for s in systems if s)]
