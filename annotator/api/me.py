"""Who the API takes the caller to be: the user, their roles, and the token in use."""

from __future__ import annotations

from datetime import datetime

from ninja import Router, Schema

from annotator import roles
from annotator.api.auth import signed_in
from annotator.api.schemas import ERRORS

router = Router(tags=["me"])


class TokenOut(Schema):
    name: str
    prefix: str
    expires_at: datetime


class MeOut(Schema):
    username: str
    admin: bool
    researcher: bool
    annotator: bool
    token: TokenOut | None


@router.get(
    "/me",
    response={200: MeOut, **ERRORS},
    auth=signed_in,
    url_name="me",
    summary="The caller: user, roles and the token used (a quick check that a token works)",
)
def me(request):
    user, token = request.user, getattr(request, "api_token", None)
    return {
        "username": user.get_username(),
        "admin": roles.is_admin(user),
        "researcher": roles.is_researcher(user),
        "annotator": roles.is_annotator(user),
        "token": {"name": token.name, "prefix": token.prefix, "expires_at": token.expires_at}
        if token
        else None,
    }
