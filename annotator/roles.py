"""Roles: annotators and researchers are Django groups; admins are staff users.

Views use the decorators here; templates get ``role`` flags from the context processor.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.urls import reverse

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ADMIN = "admin"  # not a group: staff accounts
GROUPS = (ANNOTATOR, RESEARCHER)


def remember_roles(user, names) -> None:
    """Record the user's role groups for this request (read with the session, in its query)."""
    user._group_names = set(names) & set(GROUPS)


def remember_scoped(user, scoped: bool) -> None:
    """Record whether the account is limited to some batches (read with the session, in its query;
    ``annotator.studies.selectors.is_scoped`` reads it)."""
    user._scoped = scoped


def _in_group(user, name: str) -> bool:
    if not user.is_authenticated:
        return False
    cache = getattr(user, "_group_names", None)
    if cache is None:
        cache = set(user.groups.filter(name__in=GROUPS).values_list("name", flat=True))
        user._group_names = cache
    return name in cache


def is_admin(user) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


def is_researcher(user) -> bool:
    return is_admin(user) or _in_group(user, RESEARCHER)


def is_annotator(user) -> bool:
    return _in_group(user, ANNOTATOR) or is_admin(user)


class RoleRequired(PermissionDenied):
    """A page refused because the account lacks ``role``; the 403 page names the role it needs."""

    def __init__(self, role: str, reason: str = ""):
        self.role = role
        super().__init__(reason or f"This page needs the {role} role.")


def _requires(check: Callable, role: str) -> Callable:
    def decorator(view: Callable) -> Callable:
        @login_required
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not check(request.user):
                raise RoleRequired(role)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


admin_required = _requires(is_admin, ADMIN)
researcher_required = _requires(is_researcher, RESEARCHER)
annotator_required = _requires(is_annotator, ANNOTATOR)


def role_names(user) -> list[str]:
    """The roles an account has, widest first (an admin is also a researcher and an annotator)."""
    if user is None or not user.is_authenticated:
        return []
    checks = ((ADMIN, is_admin), (RESEARCHER, is_researcher), (ANNOTATOR, is_annotator))
    return [name for name, check in checks if check(user)]


# The top bar's links per role (label, URL name), after Home; Rubric is for everyone.
NAV_LINKS = {
    "annotator": (("Your queue", "annotate_queue"),),
    "researcher": (("Reports", "report_list"), ("Streams", "stream_list"), ("LLM judges", "judges")),
    "admin": (("Upload", "upload"), ("Studies", "studies"), ("Assignment", "assignment_overview")),
}


def nav_links(role: dict[str, bool]) -> list[dict[str, str]]:
    links = [
        {"label": label, "url": reverse(name)}
        for key in NAV_LINKS
        if role[key]
        for label, name in NAV_LINKS[key]
    ]
    return links + [{"label": "Rubric", "url": reverse("rubric")}]


def context_processor(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"role": {"admin": False, "researcher": False, "annotator": False}}
    role = {
        "admin": is_admin(user),
        "researcher": is_researcher(user),
        "annotator": is_annotator(user),
    }
    # A callable: the template calls it where the top bar is drawn, so an htmx fragment does not
    # reverse the bar's URLs for nothing.
    return {"role": role, "nav_links": partial(nav_links, role)}
