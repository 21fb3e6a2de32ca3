"""The judge import page's forms: judge scores, and pairwise verdicts."""

from __future__ import annotations

from django import forms
from django.conf import settings

from annotator.imports.reading import human_size
from annotator.models import Batch, Judge
from hcs.judge_output import JudgeScale

SCALES = [("0-1", "0.0 – 1.0"), ("1-4", "1 – 4"), ("1-5", "1 – 5")]


class _JudgeFileForm(forms.Form):
    batch = forms.ModelChoiceField(queryset=Batch.objects.order_by("name"), to_field_name="name")
    judge = forms.CharField(max_length=Judge._meta.get_field("name").max_length, label="Judge name")
    model = forms.CharField(max_length=200, required=False, label="Model (optional)")
    template = forms.CharField(max_length=200, required=False, label="Template (optional)")
    file = forms.FileField(help_text="CSV (UTF-8) or JSONL.")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        limit = settings.ANNOTATOR_UPLOAD_MAX_BYTES
        if upload.size > limit:
            raise forms.ValidationError(f"The file is {human_size(upload.size)}; the largest accepted is {human_size(limit)}.")
        return upload


class JudgeScoresForm(_JudgeFileForm):
    scale = forms.ChoiceField(choices=SCALES, label="The judge's raw scale")
    lower_is_better = forms.BooleanField(
        required=False,
        label="Lower is better",
        help_text="Tick for a judge whose low scores are the good end (e.g. a frustration score, or a "
        "template whose standard reads 1 = Excellent).",
    )

    def judge_scale(self) -> JudgeScale:
        return JudgeScale.parse(self.cleaned_data["scale"], higher_is_better=not self.cleaned_data["lower_is_better"])


class VerdictsForm(_JudgeFileForm):
    baseline_system = forms.CharField(
        max_length=200, required=False, label="Baseline system id",
        help_text="Needed when rows name the pair by prompt_id.",
    )
