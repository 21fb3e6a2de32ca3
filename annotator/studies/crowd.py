"""Crowd platforms: the query parameters a platform adds to the study URL, and where it takes
workers back to. One table; the study link command, the admin page and the entry view read it.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from urllib.parse import quote, urlencode

SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PROLIFIC_ID = re.compile(r"^[A-Za-z0-9]{24}$")


@dataclass(frozen=True)
class Platform:
    key: str
    label: str
    worker_param: str
    study_param: str
    session_param: str
    placeholders: tuple[str, str, str]  # what the platform replaces with the worker's, study's, session's id
    worker_id_pattern: re.Pattern
    # Where a worker is sent back with a code ({code}); empty: the worker types the code in.
    return_url: str = ""
    # The platform's name in a sentence ("your Prolific code"); empty: the platform is not known by name.
    name: str = ""
    # Where a worker leaves the study without a code (a full study), and how to do it there.
    leave_url: str = ""
    leave_how: str = "return the task on the platform you came from, without a code"
    # The session id is the worker's own (one per participant and study), so it may bind to one worker
    # id. Not for other platforms, where a researcher may fill it with something workers share (a HIT id).
    personal_session: bool = False
    # What a made-up worker id for trying the study looks like ("24 hex digits").
    worker_id_rule: str = "up to 64 letters, digits, - and _"

    @property
    def params(self) -> tuple[str, str, str]:
        return (self.worker_param, self.study_param, self.session_param)

    def query_template(self) -> str:
        return "&".join(f"{p}={ph}" for p, ph in zip(self.params, self.placeholders, strict=True))

    def return_url_for(self, code: str) -> str:
        return self.return_url.format(code=quote(code, safe="")) if self.return_url and code else ""


PLATFORMS: dict[str, Platform] = {
    p.key: p
    for p in (
        Platform(
            key="prolific",
            label="Prolific",
            worker_param="PROLIFIC_PID",
            study_param="STUDY_ID",
            session_param="SESSION_ID",
            placeholders=("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}"),
            worker_id_pattern=PROLIFIC_ID,
            return_url="https://app.prolific.com/submissions/complete?cc={code}",
            name="Prolific",
            personal_session=True,
            worker_id_rule="24 hex digits, 0-9 and a-f",
            leave_url="https://app.prolific.com/",
            leave_how="go back to Prolific and choose \u201cCancel participation\u201d to return the study",
        ),
        # MTurk, CloudResearch and others: the platform (or the researcher's HIT page) fills in the
        # worker's id; the worker copies the completion code back into the platform.
        Platform(
            key="generic",
            label="Other platform (worker id: MTurk, CloudResearch, ...)",
            worker_param="worker_id",
            study_param="study_id",
            session_param="session_id",
            placeholders=("WORKER_ID", "STUDY_ID", "SESSION_ID"),
            worker_id_pattern=SAFE_ID,
        ),
    )
}


class BadWorkerIds(ValueError):
    """The query did not carry a well-formed worker id (or carried malformed study/session ids)."""


class UnfilledLink(BadWorkerIds):
    """The link as pasted into the platform, opened directly: an id is still the placeholder that the
    platform replaces. A researcher who clicks the printed link meets this."""

    def __init__(self, platform: Platform):
        self.platform = platform
        where = platform.name or "the crowd platform"
        worker, study, session = platform.params
        # All three ids, since a placeholder left in any of them is refused, and a session id already
        # used by one participant refuses the next (Prolific's session belongs to one participant).
        super().__init__(
            f"This is the study link to paste into {where}. {where[0].upper() + where[1:]} puts each "
            f"participant's ids in place of {', '.join(platform.placeholders[:2])} and "
            f"{platform.placeholders[2]}, so the link opens only from there. To try the study yourself, "
            f"fill in all three: a made-up {worker} ({platform.worker_id_rule}), any {study} (letters, "
            f"digits, - and _), and a new {session} for each participant. Each new {worker} with a new "
            f"{session} is a new participant."
        )


@dataclass(frozen=True)
class WorkerIds:
    worker_id: str
    study_id: str
    session_id: str


def worker_ids_from_query(platform: Platform, query) -> WorkerIds:
    """The worker's ids from the request's query parameters, checked; raises BadWorkerIds."""
    worker_id = (query.get(platform.worker_param) or "").strip()
    if worker_id == platform.placeholders[0]:  # "WORKER_ID" would pass the generic pattern
        raise UnfilledLink(platform)
    if not platform.worker_id_pattern.match(worker_id):
        raise BadWorkerIds(
            f"This link does not carry a valid {platform.label} participant id ({platform.worker_param}). "
            f"Please open the study again from {platform.label}."
        )
    others = []
    for param, placeholder in zip(platform.params[1:], platform.placeholders[1:], strict=True):
        value = (query.get(param) or "").strip()
        if value == placeholder and not SAFE_ID.match(
            value
        ):  # a worker id typed in, the rest left as printed
            raise UnfilledLink(platform)
        if value and not SAFE_ID.match(value):
            raise BadWorkerIds(
                f"The {param} in this link is not valid. Please open the study again from {platform.label}."
            )
        others.append(value)
    return WorkerIds(worker_id, *others)


def fresh_worker_query(platform: Platform, study_id: str) -> str:
    """A query for a participant never seen before: a new worker id (24 hex digits, as Prolific's are)
    and a new session id, as the platform would fill them in. For the demo's new-worker link."""
    ids = (secrets.token_hex(12), study_id, f"session-{secrets.token_hex(8)}")
    return urlencode(dict(zip(platform.params, ids, strict=True)))
