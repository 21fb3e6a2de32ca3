"""Login sessions, stored in the database with the signed-in user's id in a column.

The column lets one query load the session, its user and the user's roles on every request
(``annotator.sessions``) instead of three. Deleting a user deletes their sessions.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models


class UserSession(AbstractBaseSession):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        verbose_name = "session"

    @classmethod
    def get_session_store_class(cls):
        from annotator.sessions import SessionStore

        return SessionStore
