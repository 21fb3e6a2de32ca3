"""Making, using and revoking links: invites, one-time sign-ins and crowd study links.

Each ``*_create`` returns the link's row and its token; the token is shown once and only its
hash is stored. Using a link checks it is live (not expired, not revoked, uses left) inside the
transaction that uses it, with the row locked, so a link of N uses makes at most N accounts.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.models import (
    AccountScope,
    Batch,
    Enrolment,
    InviteLink,
    SignInLink,
    StudyLink,
)
from annotator.roles import ANNOTATOR
from annotator.services.tokens import token_hash, token_new
from annotator.studies.crowd import PLATFORMS, WorkerIds
from annotator.studies.selectors import batch_has_free_slot, session_owner_elsewhere

DEFAULT_INVITE_DAYS = 14
DEFAULT_STUDY_DAYS = 60
DEFAULT_SIGNIN_DAYS = 7
MAX_DAYS = 366
PSEUDONYM_PREFIX = "worker-"


class LinkError(Exception):
    """A link that cannot be made or used; the message is for the person holding it."""

    def __init__(self, message: str, status: int = 403):
        super().__init__(message)
        self.status = status


class LinkNotFound(LinkError):
    def __init__(self):
        super().__init__("This link does not exist. Check that you copied all of it.", status=404)


def _expiry(days: int, now: datetime) -> datetime:
    if not 1 <= days <= MAX_DAYS:
        raise LinkError(f"A link lasts 1 to {MAX_DAYS} days, not {days}.", status=400)
    return now + timedelta(days=days)


def _annotator_group() -> Group:
    return Group.objects.get_or_create(name=ANNOTATOR)[0]


def _scope(user, origin: str, batches: Sequence[Batch]) -> None:
    scope, _ = AccountScope.objects.get_or_create(user=user, defaults={"origin": origin})
    scope.batches.add(*batches)
    user.groups.add(_annotator_group())


REFUSALS = {
    "revoked": "This link was withdrawn by the study's organisers.",
    "expired": "This link has expired. Ask the study's organisers for a new one.",
    "used up": "This invite link has been used as many times as it allows.",
    "used": "This sign-in link was already used. Sign in with your password instead.",
}


def _live(link, now: datetime):
    status = link.status(now)
    if status != "live":
        raise LinkError(REFUSALS[status])
    return link


def link_find(model, token: str, now: datetime | None = None, *, lock: bool = False):
    """The live link for a token, or LinkNotFound (404) / LinkError (403: expired, revoked, used).

    ``lock`` (inside a transaction) holds the row until the transaction ends, for spending a use.
    """
    rows = model.objects.select_for_update() if lock else model.objects
    link = rows.filter(token_hash=token_hash(token)).first()
    if link is None:
        raise LinkNotFound()
    return _live(link, now or timezone.now())


@transaction.atomic
def link_revoke(*, link, now: datetime | None = None):
    type(link).objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=now or timezone.now())
    link.refresh_from_db()
    return link


# Invites ------------------------------------------------------------------------------------


@transaction.atomic
def invite_create(
    *,
    batches: Sequence[Batch],
    uses: int = 1,
    days: int = DEFAULT_INVITE_DAYS,
    created_by=None,
    now: datetime | None = None,
) -> tuple[InviteLink, str]:
    if not batches:
        raise LinkError("Choose at least one batch.", status=400)
    if uses < 1:
        raise LinkError("An invite link needs at least one use.", status=400)
    token = token_new()
    invite = InviteLink.objects.create(
        token_hash=token_hash(token),
        expires_at=_expiry(days, now or timezone.now()),
        max_uses=uses,
        created_by=created_by,
    )
    invite.batches.add(*batches)
    return invite, token


@transaction.atomic
def invite_redeem(*, token: str, username: str, password: str, now: datetime | None = None):
    """Make the annotator account the invite offers (form-checked username and password)."""
    invite = link_find(InviteLink, token, now, lock=True)
    User = get_user_model()
    if User.objects.filter(username__iexact=username).exists():
        raise LinkError("That username is taken; choose another.", status=400)
    user = User.objects.create_user(username=username, password=password)
    _scope(user, AccountScope.Origin.INVITE, list(invite.batches.all()))
    InviteLink.objects.filter(pk=invite.pk).update(uses=invite.uses + 1)
    return user


# Bulk accounts and one-time sign-in links ----------------------------------------------------


@dataclass(frozen=True)
class NewAccount:
    username: str
    email: str
    token: str


@transaction.atomic
def annotators_add(
    *,
    rows: Sequence[tuple[str, str]],
    batch: Batch,
    days: int = DEFAULT_SIGNIN_DAYS,
    created_by=None,
    now: datetime | None = None,
) -> list[NewAccount]:
    """Accounts (no usable password) limited to the batch, each with a one-time sign-in link.

    ``rows`` are checked (username, email) pairs; a username in use refuses the whole list.
    """
    now = now or timezone.now()
    expires = _expiry(days, now)
    User = get_user_model()
    taken = sorted(
        u for u in User.objects.filter(username__in=[r[0] for r in rows]).values_list("username", flat=True)
    )
    if taken:
        raise LinkError(f"Username(s) already in use: {', '.join(taken)}. Nothing was created.", status=400)
    made = []
    for username, email in rows:
        user = User.objects.create_user(username=username, email=email)  # unusable password
        _scope(user, AccountScope.Origin.BULK, [batch])
        token = token_new()
        SignInLink.objects.create(
            token_hash=token_hash(token), user=user, expires_at=expires, created_by=created_by
        )
        made.append(NewAccount(username, email, token))
    return made


@transaction.atomic
def signin_use(*, token: str, password: str, now: datetime | None = None):
    """Spend the one-time link: set the account's password and return the user to sign in."""
    link = link_find(SignInLink, token, now, lock=True)
    link.used_at = now or timezone.now()
    link.save(update_fields=["used_at"])
    link.user.set_password(password)
    link.user.save(update_fields=["password"])
    return link.user


# Crowd study links ----------------------------------------------------------------------------


def _check_url(url: str) -> str:
    if url:
        try:
            URLValidator(schemes=["https", "http"])(url)
        except ValidationError as exc:
            raise LinkError(f"The completion URL {url!r} is not an http(s) URL.", status=400) from exc
    return url


@transaction.atomic
def study_link_create(
    *,
    batch: Batch,
    platform: str,
    quota: int,
    completion_code: str,
    completion_url: str = "",
    screen_out_code: str = "",
    no_consent_code: str = "",
    max_minutes: int | None = None,
    days: int = DEFAULT_STUDY_DAYS,
    created_by=None,
    now: datetime | None = None,
) -> tuple[StudyLink, str]:
    if platform not in PLATFORMS:
        raise LinkError(f"Unknown platform {platform!r}; use one of {', '.join(PLATFORMS)}.", status=400)
    if quota < 1:
        raise LinkError("The quota is at least 1 item per worker.", status=400)
    if max_minutes is not None and max_minutes < 1:
        raise LinkError("The session length is at least 1 minute.", status=400)
    codes = {
        "completion code": completion_code,
        "screen-out code": screen_out_code,
        "no-consent code": no_consent_code,
    }
    for label, code in codes.items():
        if len(code) > 100 or any(not ch.isprintable() for ch in code):
            raise LinkError(f"The {label} must be at most 100 printable characters.", status=400)
    if not completion_code.strip():
        raise LinkError("A completion code is required: workers are paid on it.", status=400)
    token = token_new()
    link = StudyLink.objects.create(
        token_hash=token_hash(token),
        expires_at=_expiry(days, now or timezone.now()),
        batch=batch,
        platform=platform,
        quota=quota,
        max_minutes=max_minutes,
        completion_code=completion_code.strip(),
        completion_url=_check_url(completion_url.strip()),
        screen_out_code=screen_out_code.strip(),
        no_consent_code=no_consent_code.strip(),
        created_by=created_by,
    )
    return link, token


SESSION_TAKEN = (
    "This study session belongs to another participant id, so it cannot start here. "
    "Please open the study again from {label}, without changing the link."
)


class StudyFull(LinkError):
    """No place is left for a new worker: they leave without a code and are not counted."""

    def __init__(self, link: StudyLink):
        super().__init__("Every place in this study is taken.", status=200)
        self.link = link


def _pseudonym() -> str:
    return PSEUDONYM_PREFIX + secrets.token_hex(5)


def crowd_enter(*, link: StudyLink, ids: WorkerIds, now: datetime | None = None) -> Enrolment:
    """The worker's enrolment (and pseudonymous account), made on the first visit of that id.

    The same worker id in the same batch and platform always returns the same account. On a platform
    whose session ids are personal (Prolific) a session id belongs to the first worker id that came
    with it, so a second id in the same session (the id edited in the URL) is refused. A new worker
    when no place is left gets ``StudyFull``.
    """
    for _attempt in range(3):
        try:
            with transaction.atomic():
                return _crowd_enter_once(link=link, ids=ids, now=now or timezone.now())
        except IntegrityError:  # the same id arrived twice at once, or a pseudonym clash: look again
            continue
    raise LinkError("Could not start your session right now; please reload the page.", status=503)


def _crowd_enter_once(*, link: StudyLink, ids: WorkerIds, now: datetime) -> Enrolment:
    platform = PLATFORMS[link.platform]
    binding = ids.session_id if platform.personal_session else ""
    if session_owner_elsewhere(
        batch_id=link.batch_id, platform=link.platform, session_id=binding, worker_id=ids.worker_id
    ):
        raise LinkError(SESSION_TAKEN.format(label=platform.label))
    found = (
        Enrolment.objects.select_related("user")
        .filter(batch_id=link.batch_id, platform=link.platform, worker_id=ids.worker_id)
        .first()
    )
    if found is not None:
        changed = []
        # A finished worker's row keeps the session they finished in: that one is paid.
        if ids.session_id and not found.end and found.platform_session_id != ids.session_id:
            found.platform_session_id = ids.session_id
            changed.append("platform_session_id")
        if binding and not found.entry_session_id:
            found.entry_session_id = binding
            changed.append("entry_session_id")
        if changed:
            found.save(update_fields=changed)
        return found
    if not batch_has_free_slot(batch=link.batch, now=now):
        raise StudyFull(link)
    user = get_user_model().objects.create_user(username=_pseudonym())
    _scope(user, AccountScope.Origin.CROWD, [link.batch])
    return Enrolment.objects.create(
        user=user,
        batch=link.batch,
        study_link=link,
        platform=link.platform,
        worker_id=ids.worker_id,
        platform_study_id=ids.study_id,
        platform_session_id=ids.session_id,
        entry_session_id=binding,
        started_at=now,
    )
