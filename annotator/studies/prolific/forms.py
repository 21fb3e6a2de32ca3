"""The Studies page's Prolific review form: the command's options, one field each."""

from __future__ import annotations

from decimal import Decimal

from django import forms

from annotator.models import Batch
from annotator.studies.prolific.bonus_csv import MAX_BYTES, BonusFileError, parse_amount, parse_bonus_csv
from annotator.studies.prolific.services.review import DEFAULT_MAX_REJECTION_RATE


class ProlificReviewForm(forms.Form):
    batch = forms.ModelChoiceField(queryset=Batch.objects.order_by("name"))
    study_id = forms.RegexField(
        regex=r"^[A-Za-z0-9]{1,100}$",
        label="Prolific study id",
        error_messages={"invalid": "Use the study id from the study's Prolific URL (letters and digits)."},
    )
    approve = forms.BooleanField(required=False, label="Approve who earned the completion code")
    reject_failed_checks = forms.BooleanField(
        required=False,
        label=(
            "Reject 2+ failed attention checks (sessions over 5 minutes); ask training failures "
            "and workers who timed out with nothing rated to return"
        ),
    )
    max_rejection_rate = forms.DecimalField(
        min_value=0,
        max_value=100,
        decimal_places=1,
        initial=DEFAULT_MAX_REJECTION_RATE,
        label="Rejection-rate cap (%)",
    )
    bonus_per_item = forms.CharField(required=False, max_length=20, label="Bonus per item (e.g. 0.05)")
    bonus_csv = forms.FileField(required=False, label="Or a bonus file (participant_id,amount[,reason])")
    # A browser never fills a file input in again, so the chosen file's text comes back here after any
    # answer (an error, a dry run): the next try sends the same rows without choosing the file again.
    bonus_rows = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        label="Or the bonus rows as CSV text (a chosen file comes back here; a new file replaces it)",
    )
    dry_run = forms.BooleanField(
        required=False, initial=True, label="Dry run: show what would be done, send nothing"
    )

    def clean_bonus_per_item(self) -> Decimal | None:
        text = self.cleaned_data.get("bonus_per_item", "").strip()
        if not text:
            return None
        try:
            return parse_amount(text, "bonus per item")
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_bonus_csv(self):
        upload = self.cleaned_data.get("bonus_csv")
        if not upload:
            return None
        if upload.size > MAX_BYTES:
            raise forms.ValidationError(f"The bonus file is larger than {MAX_BYTES // 1024 // 1024} MB.")
        content = upload.read()
        try:
            text = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = None
        if text is not None and "\x00" not in text:
            self.data = self.data.copy()  # the request's QueryDict is immutable
            self.data["bonus_rows"] = text
        try:
            return parse_bonus_csv(content)
        except BonusFileError as exc:
            raise forms.ValidationError(exc.errors) from None

    def clean_bonus_rows(self):
        text = self.cleaned_data.get("bonus_rows", "")
        if not text.strip() or self.files.get("bonus_csv"):
            return None
        try:
            return parse_bonus_csv(text.encode())
        except BonusFileError as exc:
            raise forms.ValidationError(exc.errors) from None

    def clean(self):
        data = super().clean()
        if data.get("bonus_csv") is None and data.get("bonus_rows"):
            data["bonus_csv"] = data["bonus_rows"]
        if data.get("bonus_per_item") is not None and data.get("bonus_csv"):
            raise forms.ValidationError(
                "Give either a bonus per item or bonus rows (a file, or the text box), not both."
            )
        return data
