"""The Prolific API over httpx: the calls the review needs, with the token, back-off and errors.

httpx is already a dependency (the judge providers use it) and takes a ``transport``, so the tests
put a local fake of Prolific behind the same client without any network.

The token is read from ``settings.PROLIFIC_API_TOKEN`` (the environment) on each client and sent
only in the ``Authorization`` header; it is never logged, stored or put in an error message.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    import httpx

RETRIES = 4  # after the first try, for 429 and 5xx answers
BACKOFF_SECONDS = 1.0  # doubled after each retry, unless Prolific sends Retry-After
MAX_WAIT_SECONDS = 60.0
TIMEOUT_SECONDS = 30.0

TOKEN_MESSAGE = (
    "Prolific refused the API token (401). Set PROLIFIC_API_TOKEN in the environment to a valid token "
    "from Prolific's Settings \u2192 API tokens, then run again; nothing was changed."
)


class ProlificError(Exception):
    """A call to Prolific did not succeed; the message is for the researcher."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class ProlificAuthError(ProlificError):
    """401: the token is missing or wrong. One message, naming PROLIFIC_API_TOKEN."""


class ProlificUnavailable(ProlificError):
    """No definite answer: the network failed, or 429/5xx went on after every retry. The request
    may or may not have taken effect on Prolific's side."""


@dataclass(frozen=True)
class Submission:
    id: str
    participant_id: str
    status: str

    @classmethod
    def from_json(cls, row: dict) -> Submission:
        # The list gives ``participant_id``; older answers and the single submission ``participant``.
        return cls(
            id=str(row.get("id", "")),
            participant_id=str(row.get("participant_id") or row.get("participant") or ""),
            status=str(row.get("status", "")),
        )


def _retry_after(response: httpx.Response, fallback: float) -> float:
    value = response.headers.get("Retry-After", "")
    try:
        return min(MAX_WAIT_SECONDS, max(0.0, float(value)))
    except ValueError:
        return fallback


class ProlificClient:
    """One researcher's access to Prolific. ``sleep`` is injectable so tests do not wait."""

    def __init__(
        self,
        *,
        token: str | None = None,
        base_url: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        token = settings.PROLIFIC_API_TOKEN if token is None else token
        if not token:
            raise ProlificAuthError(
                "PROLIFIC_API_TOKEN is not set: put a Prolific API token in the environment and run again; "
                "nothing was changed.",
                status=401,
            )
        import httpx  # here, not at the top: rating workers never load it (test_lazy_imports.py)

        self._http = httpx.Client(
            base_url=(base_url or settings.PROLIFIC_API_URL).rstrip("/"),
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=TIMEOUT_SECONDS,
            transport=transport,
        )
        self._sleep = sleep

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ProlificClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method: str, path: str, *, json: dict | None = None, retry_5xx: bool = True) -> dict:
        """One call with back-off. ``retry_5xx=False`` for calls that must not be repeated when
        Prolific may already have acted (the pay call): a 5xx is then reported as unknown."""
        import httpx

        wait = BACKOFF_SECONDS
        for attempt in range(RETRIES + 1):
            try:
                response = self._http.request(method, path, json=json)
            except httpx.TransportError as exc:
                raise ProlificUnavailable(
                    f"Prolific could not be reached ({type(exc).__name__}) for {method} {path}."
                ) from None
            status = response.status_code
            if status == 401:
                raise ProlificAuthError(TOKEN_MESSAGE, status=401)
            retryable = status == 429 or (status >= 500 and retry_5xx)
            if retryable and attempt < RETRIES:
                self._sleep(_retry_after(response, wait))
                wait = min(MAX_WAIT_SECONDS, wait * 2)
                continue
            if status == 429 or status >= 500:
                raise ProlificUnavailable(
                    f"Prolific answered {status} to {method} {path}{' after retries' if retryable else ''}.",
                    status=status,
                )
            if status >= 400:
                raise ProlificError(
                    f"Prolific refused {method} {path} ({status}): {_detail(response)}", status=status
                )
            if not response.content:
                return {}
            try:
                body = response.json()
            except ValueError:
                raise ProlificError(
                    f"Prolific answered {method} {path} with something that is not JSON.", status=status
                ) from None
            return body if isinstance(body, dict) else {"results": body}
        raise AssertionError("unreachable")  # pragma: no cover

    # The calls, as Prolific's API reference spells them (docs/prolific.md lists the shapes).

    def study_submissions(self, study_id: str) -> list[Submission]:
        """Every submission of the study, following the list's ``_links.next`` pages."""
        path = f"/api/v1/studies/{study_id}/submissions/"
        rows: list[Submission] = []
        while path:
            body = self._call("GET", path)
            rows += [Submission.from_json(r) for r in body.get("results", []) if isinstance(r, dict)]
            nxt = ((body.get("_links") or {}).get("next") or {}).get("href")
            path = _relative(nxt, str(self._http.base_url)) if nxt else ""
        return rows

    def submission(self, submission_id: str) -> dict:
        return self._call("GET", f"/api/v1/submissions/{submission_id}/")

    def transition(
        self, submission_id: str, *, action: str, message: str = "", rejection_category: str = ""
    ) -> dict:
        body = {"action": action}
        if action == "REJECT":
            body |= {"message": message, "rejection_category": rejection_category}
        return self._call("POST", f"/api/v1/submissions/{submission_id}/transition/", json=body)

    def bulk_approve(self, *, study_id: str, submission_ids: list[str]) -> dict:
        return self._call(
            "POST",
            "/api/v1/submissions/bulk-approve/",
            json={"study_id": study_id, "submission_ids": submission_ids},
        )

    def request_return(self, submission_id: str, *, reasons: list[str]) -> dict:
        return self._call(
            "POST",
            f"/api/v1/submissions/{submission_id}/request-return/",
            json={"request_return_reasons": reasons},
        )

    def bonus_create(self, *, study_id: str, csv_bonuses: str) -> dict:
        """Set up a bulk bonus payment (pays nothing by itself). Answers with its ``id``."""
        return self._call(
            "POST",
            "/api/v1/submissions/bonus-payments/",
            json={"study_id": study_id, "csv_bonuses": csv_bonuses},
        )

    def bonus_pay(self, bulk_id: str) -> dict:
        """Pay a bulk bonus payment. Not idempotent on Prolific's side, so never retried on 5xx."""
        return self._call("POST", f"/api/v1/bulk-bonus-payments/{bulk_id}/pay/", retry_5xx=False)


def _detail(response: httpx.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:300] or "no detail given"


def _relative(url: str, base: str) -> str:
    """Prolific's ``next`` link is absolute; the client's base URL is reused, never another host."""
    import httpx

    parsed = httpx.URL(url)
    if parsed.host and parsed.host != httpx.URL(base).host:
        raise ProlificError("Prolific's next-page link points to another host; refusing to follow it.")
    return parsed.raw_path.decode()
