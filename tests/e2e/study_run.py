"""One crowd study run from end to end, the way a research team runs it, for tests/e2e/.

A researcher plans the study from a pilot (offline annotations uploaded on the upload page) on the
plan page and with ``plan_study``. An admin uploads a batch of the planned size with gold rows on the
upload page (preview, confirm), sets consent and limits and makes a Prolific link on the Studies page;
50 workers arrive within seconds through one reverse proxy (``X-Forwarded-For`` as nginx sends it,
``REMOTE_ADDR`` the proxy's) and go through consent, instructions, training, checks and items with
plain forms or htmx, some with two tabs, double submits, a lost lease or the session clock running
out (once before the worker's first rating); a researcher excludes one annotator on the report and runs two judges against local fake
endpoints; the items where the judges disagree most are listed (page, API, command) and put first in
the queue, and a second wave of workers rates; every export is downloaded; a worker returns the
study on Prolific (webhook), and the admin reviews the study on a local fake of Prolific's API from
the Studies page (dry run, then approvals, return requests and bonuses, then once more). Last, the
team's production stream drifts and its alert goes out (``tests/e2e/stream_run.py``). Every
request and what each worker was told is kept in a :class:`StudyRun` for the tests to judge.

Each worker is a Django test client with CSRF checks on and exceptions turned into responses (a
bug is a 500 here, as in production). Pages are read as a browser reads them: the form's action,
its CSRF token, htmx's ``HX-Redirect``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlencode, urlsplit

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connections
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import Assignment, Batch, Enrolment, GoldAnswer, Item, Job, JudgeCall, QualityRule
from annotator.rating.services.assignment import assignment_expire_overdue, lease_duration
from annotator.reports.exports.formats import EXPORT_FORMATS
from annotator.services.api_tokens import api_token_create
from annotator.studies.prolific import views as prolific_views
from tests.annotator.studies.prolific_fake import STUDY as PROLIFIC_STUDY
from tests.annotator.studies.prolific_fake import Fake as FakeProlific
from tests.factories import make_user, queue_places
from tests.fake_judge import FakeJudge

WORKERS = 50
WAVE = 6  # workers who arrive after the uncertain items were put first in the queue
QUOTA = 4
MAX_MINUTES = 20  # shorter than the 30-minute lease: an item in hand is freed at the session's end
N_ITEMS = 80  # 240 slots at k = 3: room for every worker's quota, so nobody meets a full batch here
PROXY = "10.0.0.2"  # the reverse proxy's address, REMOTE_ADDR of every request
COMPLETION, SCREENED, NOCONSENT = "E2E-DONE-7Q", "E2E-SCREENED-3Z", "E2E-NOCONSENT-9K"
SAVED = "Saved your rating."
TIME_UP_TOLD = "time ran out before this rating arrived, so it was not saved"  # the usual message, in part
ALREADY = "You had already submitted this item"
DIMENSIONS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")

ACTION = re.compile(r'action="(/annotate/(item|answer)/(\d+)/submit/)"')
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
CSRF_HEADER = re.compile(r'"X-CSRFToken": "([^"]+)"')
CONSTRAINT = re.compile(r'name="constraint_(\d+)"')
CODE = re.compile(r'id="completion-code">([^<]*)<')
STUDY_TOKEN = re.compile(r"/study/([A-Za-z0-9_-]+)/\?")
PILOT_ITEMS, PILOT_RATERS = 12, 3
PLAN_TARGET_WIDTH = "0.5"
PLAN_ROW = re.compile(
    r'<tr><th scope="row">([^<]+)</th><td>([^<]+)</td><td class="num">([^<]+)</td>\s*<td class="num">([^<]+)</td></tr>'
)
PLAN_PILOT = re.compile(r"From (\d+) pilot items")
JUDGES = ("hub_answer_correctness/fake-1", "hub_answer_correctness/fake-2")
REVIEW_N = 10
BONUS_PER_ITEM = "0.05"


# --------------------------------------------------------------------------- the batch file
def batch_file() -> bytes:
    """JSONL: N_ITEMS items for two systems, two training rows and three checks (one instructed)."""
    rows = []
    for i in range(N_ITEMS):
        rows.append(
            {
                "item_id": f"route-{i:03d}",
                "prompt_id": f"p{i // 2}",
                "system_id": ("navigator", "baseline")[i % 2],
                "prompt": f"Plan a route from stop {i} to the harbour avoiding tolls.",
                "response": f"Take the coast road from stop {i}; it has no tolls and takes 25 minutes.",
                "constraints": ["avoid tolls"],
            }
        )
    gold = {
        "gold_coherence": 4,
        "gold_relevance": 4,
        "gold_instruction_following": 4,
        "gold_safety_compliance": 5,
        "gold_fluency": 4,
        "gold_flags": [],
    }
    for n in range(2):
        rows.append(
            {
                "item_id": f"warmup-{n}",
                "system_id": "baseline",
                "prompt": f"Walk to platform {n}.",
                "response": f"Platform {n} is straight ahead, past the ticket hall.",
                **gold,
                "gold_kind": "training",
                "gold_explanation": "Clear, relevant, follows the request.",
            }
        )
    for n in range(2):
        rows.append(
            {
                "item_id": f"route-9{n}1",
                "system_id": "navigator",
                "prompt": f"Bus to the market {n}.",
                "response": f"Bus {n}4 goes to the market every ten minutes.",
                **gold,
                "gold_kind": "check",
            }
        )
    rows.append(
        {
            "item_id": "route-977",
            "system_id": "navigator",
            "prompt": "Route to the zoo by bike.",
            "response": "This item checks attention: give every dimension 2.",
            **{f"gold_{d}": 2 for d in DIMENSIONS},
            "gold_flags": [],
            "gold_tolerance": 0,
            "gold_kind": "check",
            "gold_explanation": "Instructed response.",
        }
    )
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def pilot_file() -> bytes:
    """Offline annotations of a pilot (the annotation template's columns): PILOT_ITEMS items, each
    rated by PILOT_RATERS people who mostly agree, so the planner has agreement to extrapolate."""
    rng = random.Random(7)
    out = io.StringIO()
    columns = ["item_id", "system_id", "prompt", "response", "annotator", *DIMENSIONS]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for i in range(PILOT_ITEMS):
        quality = 1 + i % 5
        for r in range(PILOT_RATERS):
            scores = [min(5, max(1, quality + rng.choice((-1, 0, 0, 0, 1)))) for _ in DIMENSIONS]
            writer.writerow(
                [
                    f"pilot-{i:02d}",
                    ("navigator", "baseline")[i % 2],
                    f"Pilot route {i}.",
                    f"Answer {i}.",
                    f"pilot-rater-{r}",
                    *scores,
                ]
            )
    return out.getvalue().encode()


# --------------------------------------------------------------------------- what was seen
@dataclass
class Request:
    who: str
    method: str
    path: str
    status: int
    htmx: bool = False


@dataclass
class Worker:
    """What one worker did and was told."""

    pid: str
    behaviour: str
    htmx: bool
    session: str = ""  # the Prolific session (submission) id the worker arrived with
    wave: int = 1  # 2: arrived after the uncertain items were put first in the queue
    throttled: bool = False
    consent_refused: list[int] = field(default_factory=list)  # statuses of consent POSTs that failed
    acked: set[int] = field(default_factory=set)  # items whose submit answered "Saved your rating."
    already: set[int] = field(default_factory=set)  # items whose second submit said "already submitted"
    refused: set[int] = field(default_factory=set)  # items whose submit was refused (lease gone, time up)
    time_up: dict = field(default_factory=dict)  # the item in hand when the session's time ran out
    submitted: Counter = field(default_factory=Counter)  # item pk -> POSTs sent
    training_answers: int = 0
    check_answers: int = 0
    invalid_forms: int = 0
    codes: list[str] = field(default_factory=list)  # every completion-code box shown to the worker
    ended: str = ""  # the last page's path
    end_text: str = ""  # the last page's HTML


@dataclass
class StudyRun:
    batch_id: int = 0
    study_url: str = ""
    workers: list[Worker] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    arrival_seconds: float = 0.0
    flow_seconds: float = 0.0
    excluded_pid: str = ""
    excluded_user: str = ""
    judge_job_state: str = ""
    judge_calls_ok: int = 0
    judge_items: int = 0
    exports: dict[str, Path] = field(default_factory=dict)
    workers_csv: Path | None = None
    one_address_statuses: list[int] = field(default_factory=list)
    returned: dict = field(default_factory=dict)  # a worker who returned the study on Prolific mid-item
    plan_page: dict = field(
        default_factory=dict
    )  # the plan page: pilot items and (dimension, statistic) -> cells
    plan_json: dict = field(default_factory=dict)  # plan_study --json on the same pilot and inputs
    batch_items: int = 0
    review: dict = field(
        default_factory=dict
    )  # the uncertain items as the page, the API and the command list them
    positions_before: dict = field(
        default_factory=dict
    )  # item_id -> queue position before "first in the queue"
    positions_after: dict = field(default_factory=dict)
    review_after_wave: list = field(default_factory=list)  # every item still to route once the wave has rated
    prolific: dict = field(default_factory=dict)  # the review round trip on the fake Prolific API
    stream: Any = None  # the team's production stream (tests/e2e/stream_run.py)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def log(self, request: Request) -> None:
        with self.lock:
            self.requests.append(request)


# --------------------------------------------------------------------------- a browser
class Browser:
    """One person's browser: a cookie jar shared by its tabs, every request logged."""

    def __init__(self, run: StudyRun, who: str, address: str | None = None):
        headers = {"REMOTE_ADDR": PROXY}
        if address is not None:  # nginx's $proxy_add_x_forwarded_for with one proxy: the client's address
            headers["HTTP_X_FORWARDED_FOR"] = address
        self.client = Client(enforce_csrf_checks=True, raise_request_exception=False, **headers)
        self.run, self.who = run, who

    def tab(self) -> Tab:
        return Tab(self)


class Response:
    def __init__(self, status: int, path: str, text: str, headers):
        self.status, self.path, self.text, self.headers = status, path, text, headers


class Tab:
    """One tab: the page it shows, and the CSRF token that page carries."""

    def __init__(self, browser: Browser):
        self.browser, self.token, self.page = browser, "", None

    def _send(self, method: str, url: str, data=None, htmx: bool = False) -> Response:
        client, extra = self.browser.client, {}
        if htmx:
            extra = {"HTTP_HX_REQUEST": "true", "HTTP_X_CSRFTOKEN": self.token}
        if method == "GET":
            raw = client.get(url, **extra)
        elif htmx:
            raw = client.post(url, data or {}, **extra)
        else:
            raw = client.post(url, {**(data or {}), "csrfmiddlewaretoken": self.token})
        path = urlsplit(url).path
        self.browser.run.log(Request(self.browser.who, method, path, raw.status_code, htmx))
        body = b"" if getattr(raw, "streaming", False) else raw.content
        return Response(raw.status_code, path, body.decode("utf-8", "replace"), raw)

    def _follow(self, response: Response, htmx: bool) -> Response:
        for _ in range(10):
            if response.status in (301, 302, 303):
                response = self._send("GET", response.headers["Location"])
            elif htmx and response.headers.get("HX-Redirect"):  # htmx sets window.location
                response, htmx = self._send("GET", response.headers["HX-Redirect"]), False
            else:
                break
        if token := (CSRF_FIELD.search(response.text) or CSRF_HEADER.search(response.text)):
            self.token = token.group(1)
        self.page = response
        return response

    def get(self, url: str) -> Response:
        return self._follow(self._send("GET", url), False)

    def post(self, url: str, data=None, htmx: bool = False) -> Response:
        return self._follow(self._send("POST", url, data, htmx), htmx)


# --------------------------------------------------------------------------- the people
def admin_prepares(run: StudyRun) -> str:
    """Upload on the upload page (preview, confirm), study settings and a link on the Studies page;
    returns the link's token."""
    admin = Browser(run, "admin")
    admin.client.force_login(get_user_model().objects.get(username="e2e-admin"))
    tab = admin.tab()
    tab.get(reverse("upload"))
    preview = tab.post(
        reverse("upload_preview"),
        {
            "mode": "batch",
            "name": "E2E study",
            "k": "3",
            "file": _upload("items.jsonl", batch_file()),
        },
    )
    assert preview.status == 200, preview.text[:2000]
    token = re.search(r'name="token" value="([^"]+)"', preview.text).group(1)
    done = tab.post(reverse("upload_confirm"), {"token": token})
    assert done.status == 200 and "E2E study" in done.text, done.text[:2000]
    batch = Batch.objects.get(name="E2E study")
    run.batch_id = batch.pk
    tab.get(reverse("studies"))
    # Training and checks: the batch's form on the Studies page, the other fields at their defaults.
    rule = {
        f.name: f.get_default() for f in QualityRule._meta.concrete_fields if f.name not in ("id", "batch")
    }
    rule.update(training_items=2, check_every=2, check_min_answered=1, check_block_below=0.5)
    quality = tab.post(
        reverse("study_quality", args=[batch.pk]),
        {f"quality-{batch.pk}-{k}": str(v) for k, v in rule.items()},
    )
    assert quality.status == 200 and QualityRule.objects.get(batch=batch).check_every == 2, quality.text[
        :2000
    ]
    settings = tab.post(
        reverse("study_settings", args=[batch.pk]),
        {
            "consent_text": "## Consent\n\nYou agree that we **keep your ratings**.",
            "instructions": "Read each response in full before you score.",
            "max_items_per_annotator": "",
            "max_session_minutes": "",
        },
    )
    assert settings.status == 200, settings.text[:2000]
    made = tab.post(
        reverse("study_link_new"),
        {
            "batch": str(batch.pk),
            "platform": "prolific",
            "quota": str(QUOTA),
            "max_minutes": str(MAX_MINUTES),
            "completion_code": COMPLETION,
            "screen_out_code": SCREENED,
            "no_consent_code": NOCONSENT,
            "days": "30",
        },
    )
    assert made.status == 200, made.text[:2000]
    return STUDY_TOKEN.search(made.text).group(1)


def _upload(name: str, data: bytes):
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


BEHAVIOURS = (
    # index % 10 -> what the worker does besides rating carefully
    "careful",
    "two_tabs",
    "double_submit",
    "fails_training",
    "invalid_form",
    "declines",
    "lease_expires",
    "fails_checks",
    "time_runs_out",
    "careful",
)
# The first "time_runs_out" worker's clock runs out at their first item, after training: no rating, no code.
UNRATED = "time_runs_out_unrated"


def entry_url(token: str, pid: str, session: str) -> str:
    query = {"PROLIFIC_PID": pid, "STUDY_ID": PROLIFIC_STUDY, "SESSION_ID": session}
    return reverse("study_entry", args=[token]) + "?" + urlencode(query)


def _rating(page: str, scores: dict[str, int]) -> dict[str, str]:
    data = {f"score_{d}": str(scores[d]) for d in DIMENSIONS}
    for n in sorted(set(CONSTRAINT.findall(page))):
        data[f"constraint_{n}"] = "met"
    return data


def _gold(answer_pk: int):
    """The expert's answer behind a gold page (the test's oracle; the page itself does not say)."""
    return GoldAnswer.objects.select_related("gold_item").get(pk=answer_pk).gold_item


def _far_from(scores: dict[str, int]) -> dict[str, int]:
    return {d: (5 if scores[d] <= 3 else 1) for d in DIMENSIONS}


def pid_of(index: int) -> str:
    return f"{index:04d}e2e".ljust(24, "0")


def worker_arrives(run: StudyRun, token: str, index: int, wave: int = 1):
    """Open the study link (twice, in two tabs, for some). The second wave rates carefully."""
    behaviour = BEHAVIOURS[index % len(BEHAVIOURS)] if wave == 1 else "careful"
    if behaviour == "time_runs_out" and index < len(BEHAVIOURS):
        behaviour = UNRATED
    me = Worker(
        pid=pid_of(index), behaviour=behaviour, htmx=index % 2 == 0, session=f"session-{index}", wave=wave
    )
    browser = Browser(run, me.pid, address=f"203.0.113.{index + 1}")
    link = entry_url(token, me.pid, me.session)
    tab = browser.tab()
    page = tab.get(link)
    if page.status == 429:
        me.throttled = True
    elif behaviour == "two_tabs":  # opened again in a second tab before consenting in the first
        browser.tab().get(link)
    return me, browser, tab


def worker_visit(run: StudyRun, index: int, me: Worker, browser: Browser, tab: Tab) -> Worker:
    """The rest of one worker's visit, from the consent page to the end page."""
    if me.throttled:
        return me
    behaviour = me.behaviour
    consent = reverse("study_consent", args=[run.batch_id])
    if behaviour == "declines":
        page = tab.post(consent, {"decision": "decline"})
        return _ended(me, page)
    page = tab.post(consent, {"decision": "accept"})
    if page.status >= 400:  # e.g. a CSRF failure after the second tab: the worker reloads and tries again
        me.consent_refused.append(page.status)
        tab.get(consent)
        page = tab.post(consent, {"decision": "accept"})
    page = tab.post(reverse("study_instructions", args=[run.batch_id]))
    rng = random.Random(index)
    for _step in range(40):
        if page.path.endswith("/done/") or CODE.search(page.text):
            return _ended(me, page)
        if 'id="continue"' in page.text:  # training feedback
            page = tab.get(reverse("annotate_next", args=[run.batch_id]))
            continue
        found = ACTION.search(page.text)
        if found is None:
            return _ended(me, page)
        url, kind, pk = found.group(1), found.group(2), int(found.group(3))
        if kind == "answer":
            gold = _gold(pk)
            training = gold.kind == "training"
            bad = behaviour == "fails_training" if training else behaviour == "fails_checks"
            page = tab.post(
                url, _rating(page.text, _far_from(gold.scores) if bad else gold.scores), htmx=me.htmx
            )
            if training:
                me.training_answers += 1
            else:
                me.check_answers += 1
            continue
        page = _rate_item(run, me, browser, tab, page, url, pk, rng)
    return _ended(me, page)


def _rate_item(
    run, me: Worker, browser: Browser, tab: Tab, page: Response, url: str, pk: int, rng
) -> Response:
    scores = {d: rng.choice((3, 4, 4, 5)) for d in DIMENSIONS}
    data = _rating(page.text, scores)
    user_filter = {
        "annotator__enrolments__worker_id": me.pid,
        "item_id": pk,
        "state": Assignment.State.LEASED,
    }
    if me.behaviour == "invalid_form" and not me.invalid_forms:  # forgot a dimension: told so, then fixes it
        me.invalid_forms += 1
        missing = {key: value for key, value in data.items() if key != "score_fluency"}
        refused = tab.post(url, missing, htmx=me.htmx)
        assert refused.status == 422, (refused.status, refused.text[:500])
    if me.behaviour == "lease_expires" and not me.refused and not me.acked:
        Assignment.objects.filter(**user_filter).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
    if (me.behaviour == "time_runs_out" and me.acked) or (me.behaviour == UNRATED and not me.acked):
        me.time_up = _clock_runs_out(me, pk)
    other = None
    if me.behaviour == "two_tabs" and not me.acked:  # the same item open in a second tab
        other = browser.tab()
        other.get(reverse("annotate_next", args=[run.batch_id]))
    me.submitted[pk] += 1
    after = tab.post(url, data, htmx=me.htmx)
    _note(me, pk, after)
    if me.time_up.get("item") == pk:
        me.time_up["told"] = TIME_UP_TOLD in after.text
    if me.behaviour == "double_submit" and len(me.acked) == 1 and me.submitted[pk] == 1:
        me.submitted[pk] += 1  # a double click: the same form again
        again = tab.post(url, data, htmx=me.htmx)
        _note(me, pk, again)
        after = again
    if other is not None and (found := ACTION.search(other.page.text)) and int(found.group(3)) == pk:
        me.submitted[pk] += 1
        _note(me, pk, other.post(found.group(1), data, htmx=me.htmx))
    return after


def _clock_runs_out(me: Worker, pk: int) -> dict:
    """The worker's clock moves on MAX_MINUTES + 1 minutes while item ``pk`` is in hand: their arrival and
    their lease of it move back alike, so their session is over and the lease stands as it would then.
    Then the sweep every lease runs (the next arrival's) looks at it, before the worker sends the rating."""
    enrolment = Enrolment.objects.get(worker_id=me.pid)
    shift = timedelta(minutes=MAX_MINUTES + 1) - (timezone.now() - enrolment.started_at)
    Enrolment.objects.filter(pk=enrolment.pk).update(started_at=F("started_at") - shift)
    held = Assignment.objects.filter(annotator_id=enrolment.user_id, item_id=pk)
    held.update(leased_at=F("leased_at") - shift, lease_expires_at=F("lease_expires_at") - shift)
    lease = held.get()
    deadline = enrolment.started_at - shift + timedelta(minutes=MAX_MINUTES)
    swept_at = timezone.now()
    assignment_expire_overdue()
    item = Item.objects.get(pk=pk)
    return {
        "item": pk,
        "lease_ended_at_deadline": lease.lease_expires_at == deadline,
        "normal_expiry_ahead": lease.leased_at + lease_duration() > timezone.now(),
        "freed": held.get().state == Assignment.State.EXPIRED,
        # free for the next worker, or already theirs (another worker's lease may have come first)
        "free_or_taken": item.n_annotations + item.n_leased < item.batch.k
        or Assignment.objects.filter(item_id=pk, leased_at__gte=swept_at)
        .exclude(annotator_id=enrolment.user_id)
        .exists(),
    }


def _note(me: Worker, pk: int, page: Response) -> None:
    if SAVED in page.text and pk not in me.acked:
        me.acked.add(pk)
    elif ALREADY in page.text:
        me.already.add(pk)
    elif pk not in me.acked:
        me.refused.add(pk)
    me.codes.extend(CODE.findall(page.text))


def _ended(me: Worker, page: Response) -> Worker:
    me.ended, me.end_text = page.path, page.text
    me.codes.extend(CODE.findall(page.text))
    return me


def _in_thread(function, *args):
    try:
        return function(*args)
    finally:
        connections.close_all()


def researcher_plans(run: StudyRun) -> None:
    """The pilot's offline annotations go in on the upload page; the researcher plans N_ITEMS x 3 on the
    plan page (the page of its own, as without JavaScript) and with ``plan_study --json``."""
    admin = Browser(run, "admin")
    admin.client.force_login(make_user("e2e-admin", role="admin"))
    tab = admin.tab()
    tab.get(reverse("upload"))
    preview = tab.post(
        reverse("upload_preview"),
        {"mode": "annotations", "name": "E2E pilot", "k": "3", "file": _upload("pilot.csv", pilot_file())},
    )
    assert preview.status == 200, preview.text[:2000]
    token = re.search(r'name="token" value="([^"]+)"', preview.text).group(1)
    assert tab.post(reverse("upload_confirm"), {"token": token}).status == 200
    pilot = Batch.objects.get(name="E2E pilot")
    researcher = Browser(run, "researcher")
    researcher.client.force_login(make_user("e2e-researcher", role="researcher"))
    query = urlencode({"items": N_ITEMS, "k": 3, "target_width": PLAN_TARGET_WIDTH})
    page = researcher.tab().get(reverse("report_plan", args=[pilot.pk]) + "?" + query)
    assert page.status == 200, page.text[:2000]
    run.plan_page = {
        "pilot_items": int(PLAN_PILOT.search(page.text).group(1)),
        "rows": {(label, key): (width, items) for label, key, width, items in PLAN_ROW.findall(page.text)},
    }
    out = io.StringIO()
    call_command(
        "plan_study",
        "E2E pilot",
        "--items",
        str(N_ITEMS),
        "--k",
        "3",
        "--target-width",
        PLAN_TARGET_WIDTH,
        "--json",
        stdout=out,
    )
    run.plan_json = json.loads(out.getvalue())


def researcher_finishes(run: StudyRun, out_dir: Path, token: str) -> None:
    """Exclude one finished careful worker on the report, run two judges, route the items they disagree
    on most to people (a second wave of workers rates), download every export."""
    researcher = Browser(run, "researcher")
    researcher.client.force_login(get_user_model().objects.get(username="e2e-researcher"))
    tab = researcher.tab()
    report = tab.get(reverse("report_batch", args=[run.batch_id]))
    assert report.status == 200
    finisher = next(w for w in run.workers if w.behaviour == "careful" and len(w.acked) == QUOTA)
    user = Enrolment.objects.get(worker_id=finisher.pid).user
    run.excluded_pid, run.excluded_user = finisher.pid, user.username
    tab.post(reverse("annotator_exclude", args=[run.batch_id, user.pk]), {"reason": "rated without reading"})

    os.environ["OPENAI_API_KEY"] = "sk-e2e-not-a-real-key"
    try:
        # The second judge scores by the stop in the prompt (0, 0.25, ..., 1), the first 0.75 throughout,
        # so how far apart they are differs from item to item.
        for model, reply in (("fake-1", None), ("fake-2", _stop_score)):
            with FakeJudge(**({"reply": reply} if reply else {})) as fake:
                tab.get(reverse("judges"))
                job_page = tab.post(
                    reverse("judge_run"),
                    {
                        "batch": "E2E study",
                        "template": "hub_answer_correctness",
                        "base_url": fake.url,
                        "model": model,
                        "key_env": "OPENAI_API_KEY",
                        "concurrency": "4",
                    },
                )
                assert job_page.status == 200, job_page.text[:2000]
            if model == "fake-1":
                job = Job.objects.order_by("-created_at").first()
                run.judge_job_state = job.state
                run.judge_calls_ok = JudgeCall.objects.filter(status="ok").count()
                run.judge_items = fake.calls
    finally:
        os.environ.pop("OPENAI_API_KEY", None)

    route_uncertain_items(run, tab, out_dir)
    with ThreadPoolExecutor(max_workers=3) as pool:  # the second wave, after the routing
        indices = list(range(WORKERS + 1, WORKERS + 1 + WAVE))
        arrived = list(pool.map(lambda i: _in_thread(worker_arrives, run, token, i, 2), indices))
        run.workers += list(pool.map(lambda i, a: _in_thread(worker_visit, run, i, *a), indices, arrived))
    listed = tab.get(reverse("review_items", args=[run.batch_id]) + "?n=100000&format=csv")
    run.review_after_wave = list(csv.DictReader(io.StringIO(listed.text)))

    for key, fmt in EXPORT_FORMATS.items():
        raw = researcher.client.get(reverse("report_export", args=[run.batch_id, key]))
        run.log(Request("researcher", "GET", f"export {key}", raw.status_code))
        body = b"".join(raw.streaming_content) if raw.streaming else raw.content
        path = out_dir / fmt.filename(Batch.objects.get(pk=run.batch_id))
        path.write_bytes(body)
        run.exports[key] = path
    admin = Browser(run, "admin")
    admin.client.force_login(get_user_model().objects.get(username="e2e-admin"))
    raw = admin.client.get(reverse("study_workers_csv", args=[run.batch_id]))
    run.log(Request("admin", "GET", "workers.csv", raw.status_code))
    run.workers_csv = out_dir / "workers.csv"
    run.workers_csv.write_bytes(raw.content)


def _stop_score(prompt: str) -> str:
    stop = re.search(r"from stop (\d+)", prompt)
    score = (int(stop.group(1)) % 5) / 4 if stop else 0.5
    return json.dumps({"score": score, "reason": "Judged by the stop."})


def route_uncertain_items(run: StudyRun, tab: Tab, out_dir: Path) -> None:
    """The REVIEW_N items the two judges disagree on most, as the review page's CSV, the API and
    ``select_for_review`` list them; then the admin puts them first in the queue from the review page."""
    batch = Batch.objects.get(pk=run.batch_id)
    listed = tab.get(reverse("review_items", args=[run.batch_id]) + f"?n={REVIEW_N}&format=csv")
    assert listed.status == 200, listed.text[:2000]
    run.review["page"] = list(csv.DictReader(io.StringIO(listed.text)))
    researcher = get_user_model().objects.get(username="e2e-researcher")
    _token, key = api_token_create(user=researcher, name="e2e review", days=1)
    answer = Client().get(
        f"/api/v1/batches/{run.batch_id}/review", {"n": REVIEW_N}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    run.log(Request("researcher", "GET", "api review", answer.status_code))
    run.review["api"] = answer.json()["items"]
    out = out_dir / "review.csv"
    call_command(
        "select_for_review", "E2E study", "--n", str(REVIEW_N), "--out", str(out), stderr=io.StringIO()
    )
    run.review["command"] = list(csv.DictReader(io.StringIO(out.read_text())))

    run.positions_before = queue_places(batch)
    admin = Browser(run, "admin")
    admin.client.force_login(get_user_model().objects.get(username="e2e-admin"))
    page = admin.tab()
    page.get(reverse("review_items", args=[run.batch_id]) + f"?n={REVIEW_N}")
    moved = page.post(reverse("review_queue_first", args=[run.batch_id]), {"n": str(REVIEW_N)})
    assert moved.status == 200 and f"Put {REVIEW_N} items first" in moved.text, moved.text[:2000]
    run.positions_after = queue_places(batch)


def prolific_round_trip(run: StudyRun) -> None:
    """The admin reviews the study on the Studies page against a local fake of Prolific's API holding
    one submission per worker who started (the returned one as RETURNED): a dry run, the review
    (approve, reject failed checks by Prolific's rules, a bonus per item), then the same review again."""
    fake = FakeProlific(study_id=PROLIFIC_STUDY)
    for w in run.workers:
        if not w.throttled:
            fake.add(w.session, w.pid)
    fake.add("session-returns", pid_of(WORKERS), "RETURNED")
    admin = Browser(run, "admin")
    admin.client.force_login(get_user_model().objects.get(username="e2e-admin"))
    tab = admin.tab()
    tab.get(reverse("studies"))
    form = {
        "batch": str(run.batch_id),
        "study_id": PROLIFIC_STUDY,
        "approve": "on",
        "reject_failed_checks": "on",
        "max_rejection_rate": "10",
        "bonus_per_item": BONUS_PER_ITEM,
    }
    with mock.patch.object(prolific_views, "client_factory", fake.client):
        dry = tab.post(reverse("prolific_review"), {**form, "dry_run": "on"})
        run.prolific["dry_status"], run.prolific["dry_methods"] = dry.status, {m for m, _, _ in fake.requests}
        done = tab.post(reverse("prolific_review"), form)
        run.prolific["status"], run.prolific["page"] = done.status, done.text
        run.prolific["statuses"] = {s["participant_id"]: s["status"] for s in fake.submissions.values()}
        run.prolific["return_requested"] = {
            s["participant_id"] for s in fake.submissions.values() if s.get("return_requested")
        }
        run.prolific["paid"] = {pid: list(amounts) for pid, amounts in fake.paid.items()}
        posts = len(fake.posts())
        again = tab.post(reverse("prolific_review"), form)
        run.prolific["again_status"] = again.status
        run.prolific["paid_again"] = {pid: list(amounts) for pid, amounts in fake.paid.items()}
        run.prolific["posts_again"] = [p for p, _ in fake.posts()[posts:]]
    for key in ("dry_status", "status", "again_status"):
        run.log(Request("admin", "POST", f"prolific review ({key})", run.prolific[key]))


def one_address_too_fast(run: StudyRun, token: str) -> None:
    """One client opening the link again and again, each time putting a made-up address in front of
    its own in ``X-Forwarded-For`` (nginx appends the real one): the limit still refuses it."""
    for n in range(70):  # over two minute-windows at most, so one of them holds 35 or more
        browser = Browser(run, "one-address", address=f"192.0.2.{n + 1}, 198.51.100.7")
        raw = browser.client.get(entry_url(token, f"{n:02d}".ljust(24, "f"), f"hammer-{n}"))
        run.log(Request("one-address", "GET", "/study/", raw.status_code))
        run.one_address_statuses.append(raw.status_code)


WEBHOOK_SECRET = "e2e-webhook-secret"


def a_worker_returns_on_prolific(run: StudyRun, token: str) -> None:
    """A worker takes an item, then returns the study on Prolific: Prolific's signed webhook gives the
    slot back at once and ends the visit, with no code."""
    import base64
    import hashlib
    import hmac

    from django.test import override_settings

    me = Worker(pid=pid_of(WORKERS), behaviour="careful", htmx=True)
    browser = Browser(run, me.pid, address="203.0.113.250")
    tab = browser.tab()
    tab.get(entry_url(token, me.pid, "session-returns"))
    tab.post(reverse("study_consent", args=[run.batch_id]), {"decision": "accept"})
    page = tab.post(reverse("study_instructions", args=[run.batch_id]))
    for _step in range(10):  # training answered as the expert did, up to the first real item
        if 'id="continue"' in page.text:
            page = tab.get(reverse("annotate_next", args=[run.batch_id]))
            continue
        found = ACTION.search(page.text)
        if found is None or found.group(2) != "answer":
            break
        page = tab.post(found.group(1), _rating(page.text, _gold(int(found.group(3))).scores), htmx=True)
    held = {"annotator__enrolments__worker_id": me.pid, "state": Assignment.State.LEASED}
    run.returned["leases_before"] = Assignment.objects.filter(**held).count()
    body = json.dumps(
        {
            "event_type": "submission.status.change",
            "resource_id": "session-returns",
            "participant_id": me.pid,
            "status": "RETURNED",
        }
    ).encode()
    stamp = str(int(time.time()))
    signature = base64.b64encode(
        hmac.new(WEBHOOK_SECRET.encode(), stamp.encode() + body, hashlib.sha256).digest()
    )
    with override_settings(PROLIFIC_WEBHOOK_SECRET=WEBHOOK_SECRET):
        answer = Client(enforce_csrf_checks=True).post(
            reverse("prolific_webhook"),
            body,
            content_type="application/json",
            HTTP_X_PROLIFIC_REQUEST_TIMESTAMP=stamp,
            HTTP_X_PROLIFIC_REQUEST_SIGNATURE=signature.decode(),
        )
    run.log(Request("prolific", "POST", "webhook", answer.status_code))
    run.returned.update(
        status=answer.status_code,
        leases_after=Assignment.objects.filter(**held).count(),
        end=Enrolment.objects.get(worker_id=me.pid).end,
        next_page=tab.get(reverse("annotate_next", args=[run.batch_id])).text,
    )


def study_run(out_dir: Path) -> StudyRun:
    run = StudyRun()
    researcher_plans(run)
    token = admin_prepares(run)
    run.batch_items = Item.objects.filter(batch_id=run.batch_id).count()
    run.study_url = reverse("study_entry", args=[token])
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=10) as pool:  # everyone opens the link within seconds
        arrived = list(pool.map(lambda i: _in_thread(worker_arrives, run, token, i), range(WORKERS)))
    run.arrival_seconds = time.monotonic() - started
    with ThreadPoolExecutor(max_workers=8) as pool:
        run.workers = list(pool.map(lambda i: _in_thread(worker_visit, run, i, *arrived[i]), range(WORKERS)))
    run.flow_seconds = time.monotonic() - started
    researcher_finishes(run, out_dir, token)
    a_worker_returns_on_prolific(run, token)
    prolific_round_trip(run)
    one_address_too_fast(run, token)
    from tests.e2e.stream_run import stream_run  # it reads this module's browser and rating page

    run.stream = stream_run(run)
    return run
