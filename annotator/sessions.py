"""The session engine (``SESSION_ENGINE = "annotator.sessions"``): Django's database sessions,
with the session's user, their roles and whether the account is limited to some batches
(``AccountScope``) loaded in the same query as the session.

The session model and its store live together here, as Django's documentation of extending the
database session engine shows; ``annotator.models`` re-exports the model. The model's ``user`` column
lets that one query load the session, its user and the user's roles instead of three; deleting a
user deletes their sessions.

Sessions stay rows in the database, so logging out (or an admin deleting the row) ends a
session on every app server at once, and a password change still ends the other sessions
(``annotator.middleware`` checks the session hash exactly as Django does). The query is written
by hand because it runs on every request and the ORM spends longer building it than the database
spends running it; it is the same text on both databases.
"""

from __future__ import annotations

from functools import lru_cache

from django.apps import apps
from django.conf import settings
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.contrib.sessions.backends.base import UpdateError
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import InterfaceError, OperationalError, connection, models
from django.utils import timezone

from annotator.db_rows import columns, instance_from_row
from annotator.hot_sql import hot_cursor
from annotator.roles import GROUPS, remember_roles, remember_scoped


class UserSession(AbstractBaseSession):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        app_label = "annotator"
        verbose_name = "session"

    @classmethod
    def get_session_store_class(cls):
        return SessionStore


def _user_pk(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@lru_cache(maxsize=1)
def _session_sql() -> str:
    """The session's query text, built once per process."""
    qn = connection.ops.quote_name
    User = get_user_model()
    member, group = qn(User.groups.through._meta.db_table), qn(Group._meta.db_table)
    roles = ", ".join(
        f"EXISTS (SELECT 1 FROM {member} m INNER JOIN {group} g ON g.id = m.group_id"
        " WHERE m.user_id = u.id AND g.name = %s)"
        for _ in GROUPS
    )
    # By the app registry: the scope is the studies package's model, which the session engine does not import.
    scope = apps.get_model("annotator", "AccountScope")
    scoped = f"EXISTS (SELECT 1 FROM {qn(scope._meta.db_table)} a WHERE a.user_id = u.id)"
    return (
        f"SELECT s.session_data, u.id, {columns(User, 'u')}, {roles}, {scoped}"
        f" FROM {qn(UserSession._meta.db_table)} s LEFT JOIN {qn(User._meta.db_table)} u ON u.id = s.user_id"
        " WHERE s.session_key = %s AND s.expire_date > %s"
    )


class SessionStore(DatabaseSessionStore):
    loaded_user = None  # the signed-in user, read with the session (None: nobody, or not loaded)

    @classmethod
    def get_model_class(cls):
        return UserSession

    def _load_sql(self) -> tuple[str, list]:
        return _session_sql(), [
            *GROUPS,
            self.session_key,
            connection.ops.adapt_datetimefield_value(timezone.now()),
        ]

    def _get_session_from_db(self):
        self.loaded_user = None
        with hot_cursor() as cursor:
            cursor.execute(*self._load_sql())
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        session_data, user_id, rest = row[0], row[1], row[2:]
        if user_id is not None:
            n = len(get_user_model()._meta.concrete_fields)
            user = instance_from_row(get_user_model(), rest[:n])
            roles, scoped = rest[n:-1], rest[-1]
            remember_roles(user, [name for name, member in zip(GROUPS, roles, strict=True) if member])
            remember_scoped(user, bool(scoped))
            self.loaded_user = user
        return self.model(session_key=self.session_key, session_data=session_data)

    def save(self, must_create=False):
        # Django reports any database error of an update as UpdateError, which becomes a bare
        # "Bad Request (400)". A lost connection is an outage, not a deleted session: raise it as
        # such, so the request answers the 503 page ("try again, nothing was lost").
        try:
            super().save(must_create=must_create)
        except UpdateError as exc:
            if isinstance(exc.__context__, (OperationalError, InterfaceError)):
                raise exc.__context__ from None
            raise

    def create_model_instance(self, data):
        session = super().create_model_instance(data)
        session.user_id = _user_pk(data.get(SESSION_KEY))
        return session
