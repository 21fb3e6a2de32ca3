"""Roles: annotators and researchers are Django groups; admins are staff users.

Views use the decorators here; templates get ``role`` flags from the context processor.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
GROUPS = (ANNOTATOR, RESEARCHER)


def _in_group(user, name: str) -> bool:
    if not user.is_authenticated:
        return False
    cache = getattr(user, "_group_names", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._group_names = cache
    return name in cache


def is_admin(user) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


def is_researcher(user) -> bool:
    return is_admin(user) or _in_group(user, RESEARCHER)


def is_annotator(user) -> bool:
    return _in_group(user, ANNOTATOR) or is_admin(user)


def _requires(check: Callable) -> Callable:
    def decorator(view: Callable) -> Callable:
        @login_required
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not check(request.user):
                raise PermissionDenied("Your account does not have the role this page needs.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


admin_required = _requires(is_admin)
researcher_required = _requires(is_researcher)
annotator_required = _requires(is_annotator)


def context_processor(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"role": {"admin": False, "researcher": False, "annotator": False}}
    return {
        "role": {
            "admin": is_admin(user),
            "researcher": is_researcher(user),
            "annotator": is_annotator(user),
        }
    }
