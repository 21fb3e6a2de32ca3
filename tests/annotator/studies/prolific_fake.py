"""A local fake of Prolific's API (the calls docs/prolific.md lists), behind httpx.MockTransport.

It keeps submissions, bulk bonus payments and every payment made, so tests count what was paid,
and it can answer chosen calls with an error status or a network failure first.
"""

from __future__ import annotations

import json
import re
import threading
from collections import defaultdict
from decimal import Decimal

import httpx
from django.utils import timezone

from annotator.models import Annotation, Enrolment, GoldAnswer, GoldItem, Item
from annotator.studies.prolific.client import ProlificClient
from tests.factories import make_user

TOKEN = "test-token-0123456789"
STUDY = "6500aa00bb11cc22dd33ee44"


class Fake:
    def __init__(self, study_id: str = STUDY, page_size: int = 50):
        self.study_id = study_id
        self.submissions: dict[str, dict] = {}
        self.bulks: dict[str, dict] = {}
        self.paid: dict[str, list[int]] = defaultdict(list)  # participant -> amounts paid, in pence
        self.requests: list[tuple[str, str, dict | None]] = []
        self.failures: dict[tuple[str, str], list] = defaultdict(
            list
        )  # (method, path regex) -> statuses/errors
        self.page_size = page_size
        self.auth_seen: set[str] = set()
        self.lock = threading.Lock()  # two review runs at once share one fake

    # Setting up

    def add(self, submission_id: str, participant_id: str, status: str = "AWAITING REVIEW") -> None:
        self.submissions[submission_id] = {
            "id": submission_id,
            "participant_id": participant_id,
            "status": status,
            "study_id": self.study_id,
            "bonus_payments": [],
        }

    def fail(self, method: str, path: str, *answers) -> None:
        """Answer the next calls matching ``path`` (a regex) with these statuses or exceptions."""
        self.failures[(method, path)] += list(answers)

    def client(self, **options) -> ProlificClient:
        return ProlificClient(
            token=TOKEN,
            base_url="https://prolific.test",
            transport=httpx.MockTransport(self),
            sleep=lambda s: None,
            **options,
        )

    def paid_total(self, participant_id: str) -> int:
        return sum(self.paid[participant_id])

    def posts(self, fragment: str = "") -> list[tuple[str, dict | None]]:
        return [(p, b) for m, p, b in self.requests if m == "POST" and fragment in p]

    # The transport

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            return self._answer(request)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, path, body))
        self.auth_seen.add(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != f"Token {TOKEN}":
            return httpx.Response(401, json={"detail": "Invalid token."})
        for (method, pattern), answers in self.failures.items():
            if method == request.method and re.fullmatch(pattern, path) and answers:
                answer = answers.pop(0)
                if isinstance(answer, Exception):
                    raise answer
                if isinstance(
                    answer, tuple
                ):  # (status, then act anyway): Prolific did it, the answer was lost
                    status, act = answer
                    if act:
                        self._route(request.method, path, body, request)
                    return httpx.Response(status, headers={"Retry-After": "0"})
                return httpx.Response(answer, headers={"Retry-After": "0"}, json={"error": "injected"})
        return self._route(request.method, path, body, request)

    def _route(self, method, path, body, request) -> httpx.Response:
        if m := re.fullmatch(r"/api/v1/studies/([^/]+)/submissions/", path):
            rows = [s for s in self.submissions.values() if s["study_id"] == m.group(1)]
            offset = int(request.url.params.get("offset", "0"))
            page = rows[offset : offset + self.page_size]
            nxt = (
                f"https://prolific.test{path}?offset={offset + self.page_size}"
                if offset + self.page_size < len(rows)
                else None
            )
            return httpx.Response(
                200,
                json={
                    "results": [{k: v for k, v in r.items() if k != "bonus_payments"} for r in page],
                    "_links": {"next": {"href": nxt}},
                    "meta": {"count": len(rows)},
                },
            )
        if method == "GET" and (m := re.fullmatch(r"/api/v1/submissions/([^/]+)/", path)):
            sub = self.submissions.get(m.group(1))
            return (
                httpx.Response(200, json=sub) if sub else httpx.Response(404, json={"detail": "Not found."})
            )
        if m := re.fullmatch(r"/api/v1/submissions/([^/]+)/transition/", path):
            sub = self.submissions[m.group(1)]
            if sub["status"] != "AWAITING REVIEW":
                return httpx.Response(400, json={"error": "not awaiting review"})
            sub["status"] = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[body["action"]]
            return httpx.Response(200, json=sub)
        if m := re.fullmatch(r"/api/v1/submissions/([^/]+)/request-return/", path):
            self.submissions[m.group(1)]["return_requested"] = body["request_return_reasons"]
            return httpx.Response(200, json=self.submissions[m.group(1)])
        if path == "/api/v1/submissions/bulk-approve/":
            for sid in body["submission_ids"]:
                self.submissions[sid]["status"] = "APPROVED"
            return httpx.Response(200, json={})
        if path == "/api/v1/submissions/bonus-payments/":
            bulk_id = f"bulk{len(self.bulks) + 1:04d}"
            rows = [line.split(",") for line in body["csv_bonuses"].strip().split("\n")]
            self.bulks[bulk_id] = {"study_id": body["study_id"], "rows": rows, "paid": 0}
            total = sum(int(Decimal(a) * 100) for _, a in rows)
            return httpx.Response(201, json={"id": bulk_id, "study": body["study_id"], "total_amount": total})
        if m := re.fullmatch(r"/api/v1/bulk-bonus-payments/([^/]+)/pay/", path):
            bulk = self.bulks[m.group(1)]
            bulk["paid"] += 1  # not idempotent, like Prolific's: a second call pays again
            for participant, amount in bulk["rows"]:
                pence = int(Decimal(amount) * 100)
                self.paid[participant].append(pence)
                for sub in self.submissions.values():
                    if sub["participant_id"] == participant and sub["study_id"] == bulk["study_id"]:
                        sub["bonus_payments"].append(pence)
            return httpx.Response(202, json={})
        return httpx.Response(404, json={"detail": f"no fake for {method} {path}"})


def worker(
    batch,
    pid: str,
    *,
    session: str,
    study: str = STUDY,
    items: int = 2,
    end: str = Enrolment.End.DONE,
    minutes: float = 12,
    failed_checks: int = 0,
    passed_checks: int = 0,
) -> Enrolment:
    """A Prolific worker of the batch who rated ``items`` items over ``minutes`` minutes."""
    user = make_user(f"w-{pid[:8]}-{session[:6]}")
    now = timezone.now()
    started = now - timezone.timedelta(minutes=minutes)
    enrolment = Enrolment.objects.create(
        user=user,
        batch=batch,
        platform="prolific",
        worker_id=pid,
        platform_study_id=study,
        platform_session_id=session,
        entry_session_id=session,
        started_at=started,
        end=end,
        ended_at=now if end else None,
    )
    for item in Item.objects.filter(batch=batch).order_by("pk")[:items]:
        Annotation.objects.create(item=item, annotator=user, submitted_at=now)
    for i in range(failed_checks + passed_checks):
        gold, _ = GoldItem.objects.get_or_create(
            batch=batch,
            item_id=f"check-{i + 1}",
            defaults={"kind": GoldItem.Kind.CHECK, "prompt": "p", "response": "r", "scores": {}},
        )
        GoldAnswer.objects.create(
            gold_item=gold, annotator=user, shown_at=started, submitted_at=now, passed=i >= failed_checks
        )
    return enrolment
