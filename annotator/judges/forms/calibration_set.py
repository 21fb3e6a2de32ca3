"""The calibration set page's form: a seeded random sample, or the item ids a researcher lists."""

from __future__ import annotations

from django import forms

MAX_IDS_TEXT = 200_000


class CalibrationSetForm(forms.Form):
    sample = forms.IntegerField(
        min_value=1,
        required=False,
        label="Random sample of (items)",
        help_text="Leave blank to list the items instead.",
    )
    seed = forms.IntegerField(
        min_value=0,
        max_value=2**31 - 1,
        initial=0,
        required=False,
        help_text="The same seed and size give the same items.",
    )
    item_ids = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        required=False,
        max_length=MAX_IDS_TEXT,
        label="Or these item ids",
        help_text="One per line (or separated by commas).",
    )
    note = forms.CharField(max_length=1000, required=False, help_text="Why these items, for the judge card.")

    def clean(self):
        data = super().clean()
        ids = [i for line in data.get("item_ids", "").splitlines() for i in line.split(",") if i.strip()]
        if (data.get("sample") is None) == (not ids):
            raise forms.ValidationError("Give either a sample size or a list of item ids.")
        data["ids"] = ids or None
        if "\x00" in data.get("item_ids", "") + data.get("note", ""):
            raise forms.ValidationError("The text holds a NUL character.")
        return data
