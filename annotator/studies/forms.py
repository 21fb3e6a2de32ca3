"""The study forms: the Studies page's (study links, invite links, bulk accounts, a batch's study
settings) and the link pages' that set a password (invite, one-time sign-in)."""

from __future__ import annotations

from typing import ClassVar

from django import forms
from django.contrib.auth.forms import SetPasswordForm

from annotator.models import Batch, GoldItem, QualityRule
from annotator.studies.crowd import PLATFORMS
from annotator.studies.services.links import (
    DEFAULT_INVITE_DAYS,
    DEFAULT_SIGNIN_DAYS,
    DEFAULT_STUDY_DAYS,
    MAX_DAYS,
)


class _OwnIds:
    """The Studies page shows every one of its forms at once: each form's element ids start with its own
    ``ID_PREFIX`` so no two fields share an id (a label then focuses its own field, not another form's)."""

    ID_PREFIX = ""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", f"{self.ID_PREFIX}_%s")
        super().__init__(*args, **kwargs)


def _days(initial: int) -> forms.IntegerField:
    return forms.IntegerField(min_value=1, max_value=MAX_DAYS, initial=initial, label="Expires after (days)")


class StudyLinkForm(_OwnIds, forms.Form):
    ID_PREFIX = "study"
    batch = forms.ModelChoiceField(queryset=Batch.objects.order_by("name"))
    platform = forms.ChoiceField(choices=[(p.key, p.label) for p in PLATFORMS.values()])
    quota = forms.IntegerField(min_value=1, max_value=100_000, initial=20, label="Items per worker")
    max_minutes = forms.IntegerField(
        min_value=1, max_value=24 * 60, required=False, label="Longest session (minutes)"
    )
    completion_code = forms.CharField(max_length=100)
    completion_url = forms.URLField(
        max_length=500,
        label="Completion URL",
        required=False,
        assume_scheme="https",
        help_text="Blank on Prolific: its completion URL with the code.",
    )
    screen_out_code = forms.CharField(max_length=100, required=False)
    no_consent_code = forms.CharField(max_length=100, required=False)
    days = _days(DEFAULT_STUDY_DAYS)


class InviteLinkForm(_OwnIds, forms.Form):
    ID_PREFIX = "invite"
    batches = forms.ModelMultipleChoiceField(queryset=Batch.objects.order_by("name"))
    uses = forms.IntegerField(min_value=1, max_value=10_000, initial=1, label="Most accounts it makes")
    days = _days(DEFAULT_INVITE_DAYS)


class AnnotatorListForm(_OwnIds, forms.Form):
    ID_PREFIX = "accounts"
    batch = forms.ModelChoiceField(queryset=Batch.objects.order_by("name"))
    file = forms.FileField(help_text="CSV with the columns username,email.")
    days = _days(DEFAULT_SIGNIN_DAYS)


class StudySettingsForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        instance = kwargs.get("instance")  # one form per batch on the page: ids named by the batch
        kwargs.setdefault("auto_id", f"settings-{instance.pk}_%s" if instance is not None else "id_%s")
        super().__init__(*args, **kwargs)

    class Meta:
        model = Batch
        fields = ("consent_text", "instructions", "max_items_per_annotator", "max_session_minutes")
        widgets: ClassVar[dict] = {
            "consent_text": forms.Textarea(attrs={"rows": 6}),
            "instructions": forms.Textarea(attrs={"rows": 8}),
        }


class QualityRuleForm(forms.ModelForm):
    """A batch's training and attention checks, set on the Studies page (admins who are not superusers
    cannot open the Django admin)."""

    class Meta:
        model = QualityRule
        fields = (
            "training_items",
            "training_max_mae",
            "check_every",
            "check_warn_below",
            "check_block_below",
            "check_min_answered",
            "min_seconds",
            "window",
        )
        labels: ClassVar[dict] = {
            "training_items": "Training items first",
            "training_max_mae": "Training passes at a mean absolute error up to",
            "check_every": "One attention check in every … items",
            "check_warn_below": "Warn below this share of checks passed",
            "check_block_below": "Stop below this share of checks passed",
            "check_min_answered": "Checks answered before warning or stopping",
            "min_seconds": "Fewer seconds than this on an item count as too fast",
            "window": "Agreement over time: submissions per window",
        }

    def __init__(self, *args, batch: Batch, **kwargs):
        super().__init__(*args, **kwargs)
        self.batch = batch
        self.prefix = f"quality-{batch.pk}"

    def clean(self):
        data = super().clean()
        warn, block = data.get("check_warn_below"), data.get("check_block_below")
        if warn is not None and block is not None and block > warn:
            self.add_error("check_block_below", "Stopping must come at or below the warning's share.")
        wanted = data.get("training_items")
        if wanted:
            have = GoldItem.objects.filter(batch=self.batch, kind=GoldItem.Kind.TRAINING).count()
            if wanted > have:
                self.add_error(
                    "training_items",
                    f"The batch has {have} training item{'s' if have != 1 else ''}; upload gold rows "
                    "with gold_kind=training to ask for more.",
                )
        return data


class PasswordRuleErrorsOnThePassword:
    """Put the password rules' errors (too short, too common) under the password field they are
    about, not under its confirmation, where Django's forms put them; a mismatch stays on the
    confirmation. ``password_field`` names the first password field."""

    password_field = "password1"

    def validate_password_for_user(self, user, password_field_name=None, **kwargs):
        super().validate_password_for_user(user, self.password_field, **kwargs)


class SignInPasswordForm(PasswordRuleErrorsOnThePassword, SetPasswordForm):
    password_field = "new_password1"
