"""The form that makes an API token: a name and a lifetime in days."""

from __future__ import annotations

from django import forms
from django.conf import settings

from annotator.services.api_tokens import NAME_MAX_LENGTH

DEFAULT_DAYS = 90


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=NAME_MAX_LENGTH, help_text="What the token is for, e.g. \u201ceval script\u201d."
    )
    days = forms.IntegerField(
        min_value=1,
        max_value=settings.ANNOTATOR_API_TOKEN_MAX_DAYS,
        initial=DEFAULT_DAYS,
        label="Expires after (days)",
    )
