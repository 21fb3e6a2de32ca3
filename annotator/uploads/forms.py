"""The upload page's form: a batch file or an annotation file, with the batch settings."""

from __future__ import annotations

import json

from django import forms

from annotator.uploads.files.checks import MAX_K, MIN_K, NAME_MAX_LENGTH, rubric_from_data
from annotator.uploads.files.errors import FileRefused
from annotator.uploads.files.file_size import check_size
from hcs.rubric import parse_json

BATCH, ANNOTATIONS = "batch", "annotations"
RUBRIC_MAX_BYTES = 1024 * 1024


class SizeCheckedFileField(forms.FileField):
    """A file field that refuses a file over ``ANNOTATOR_UPLOAD_MAX_MB`` with the reader's message."""

    def clean(self, data, initial=None):
        upload = super().clean(data, initial)
        if upload:
            try:
                check_size(upload.size)
            except FileRefused as exc:
                raise forms.ValidationError(str(exc)) from None
        return upload


class UploadForm(forms.Form):
    mode = forms.ChoiceField(
        choices=[(BATCH, "A batch of items to rate"), (ANNOTATIONS, "Annotations made offline")],
        widget=forms.HiddenInput,
    )
    file = SizeCheckedFileField(help_text="CSV (UTF-8) or JSONL.")
    name = forms.CharField(max_length=NAME_MAX_LENGTH, label="Batch name")
    k = forms.IntegerField(
        min_value=MIN_K,
        max_value=MAX_K,
        initial=MIN_K,
        required=False,
        label="Annotations per item (k)",
        error_messages={
            "min_value": f"k must be at least {MIN_K}: each item needs at least {MIN_K} "
            "independent annotations."
        },
    )
    rubric_file = forms.FileField(
        required=False,
        label="Rubric (optional)",
        help_text="A rubric JSON file of the same schema as hcs/rubrics/hcs.json; default HCS.",
    )

    def clean_rubric_file(self):
        upload = self.cleaned_data.get("rubric_file")
        if not upload:
            return None
        if upload.size > RUBRIC_MAX_BYTES:
            raise forms.ValidationError("The rubric file is too large for a rubric.")
        try:
            data = parse_json(upload.read().decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise forms.ValidationError(f"The rubric file is not UTF-8 JSON: {exc}") from None
        except (ValueError, RecursionError):  # a number past the digit limit, or nesting too deep
            raise forms.ValidationError(
                "The rubric file is not a valid rubric: its JSON is too deep or a number too long."
            ) from None
        try:
            return rubric_from_data(data)
        except ValueError as exc:
            raise forms.ValidationError(str(exc).replace("The rubric", "The rubric file", 1)) from None

    def clean(self):
        data = super().clean()
        if data.get("mode") == BATCH and data.get("k") is None and "k" not in self.errors:
            data["k"] = MIN_K
        return data
