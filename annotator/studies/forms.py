"""Forms of the link pages that set a password (invite, one-time sign-in)."""

from __future__ import annotations

from django.contrib.auth.forms import SetPasswordForm


class PasswordRuleErrorsOnThePassword:
    """Put the password rules' errors (too short, too common) under the password field they are
    about, not under its confirmation, where Django's forms put them; a mismatch stays on the
    confirmation. ``password_field`` names the first password field."""

    password_field = "password1"

    def validate_password_for_user(self, user, password_field_name=None, **kwargs):
        super().validate_password_for_user(user, self.password_field, **kwargs)


class SignInPasswordForm(PasswordRuleErrorsOnThePassword, SetPasswordForm):
    password_field = "new_password1"
