"""Who may open what: every URL of the app, taken from the URL resolver, as every role.

ACCESS holds the expected answer per URL name and role. A URL name missing from ACCESS fails
the test, so a new page cannot ship without someone deciding who may see it. Django's own admin
(which checks staff itself) is the only part of the URL tree left out.

Answers: LOGIN = a redirect to the login page; 403 / 404 / 405; any other number is the status
an allowed request gets (200 for a page; 302 elsewhere than the login page, 400 or 422 for an
empty form, when the URL only takes POST).

The HTTP API (names ``api-v1:...``) is walked the same way, each role calling it with its own API
token (anonymous: none, so 401): a token has exactly its user's role.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

from annotator import models
from annotator.models import Annotation, Assignment, Batch
from annotator.rating.services.assignment import item_next_for_annotator
from annotator.reports.exports.formats import EXPORT_FORMATS as EXPORTS
from annotator.services.api_tokens import api_token_create
from annotator.streams.services.streams import stream_create
from annotator.studies.services.links import annotators_add, invite_create, study_link_create
from tests.factories import PASSWORD, make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

LOGIN = "login"
ROLES = ("anonymous", "none", "annotator", "researcher", "admin")

# Role groups: what the role decorators give (admins are annotators and researchers too).
EVERYONE = {"anonymous": 200, "none": 200, "annotator": 200, "researcher": 200, "admin": 200}
SIGNED_IN = {"anonymous": LOGIN, "none": 200, "annotator": 200, "researcher": 200, "admin": 200}
ANNOTATORS = {"anonymous": LOGIN, "none": 403, "annotator": 200, "researcher": 403, "admin": 200}
RESEARCHERS = {"anonymous": LOGIN, "none": 403, "annotator": 403, "researcher": 200, "admin": 200}
ADMINS = {"anonymous": LOGIN, "none": 403, "annotator": 403, "researcher": 403, "admin": 200}


# The API answers 401 (a problem, not a redirect) when no valid token comes with the request.
API_EVERYONE = EVERYONE
API_SIGNED_IN = {**SIGNED_IN, "anonymous": 401}
API_RESEARCHERS = {**RESEARCHERS, "anonymous": 401}
API_ADMINS = {**ADMINS, "anonymous": 401}


def allowed(group: dict, status: int) -> dict:
    """The same roles, with the status an allowed (empty) request gets."""
    return {role: (status if answer == 200 else answer) for role, answer in group.items()}


# url name -> {method: expected answer per role}. POSTs send an empty form. A method not listed
# must be refused: 405, or the same denial the role gets on the listed method.
ACCESS: dict[str, dict[str, dict]] = {
    "home": {"GET": SIGNED_IN},
    "login": {"GET": EVERYONE, "POST": allowed(EVERYONE, 200)},  # an empty form shows its errors
    "logout": {"POST": {role: LOGIN for role in ROLES}},  # signs out, then the login page
    "rubric": {"GET": SIGNED_IN},
    "favicon": {"GET": allowed(EVERYONE, 301)},  # to the static icon
    "upload": {"GET": ADMINS},
    "upload_preview": {"POST": allowed(ADMINS, 400)},
    "upload_confirm": {"POST": allowed(ADMINS, 302)},
    "upload_cancel": {"POST": allowed(ADMINS, 302)},
    "annotation_template": {"GET": SIGNED_IN},
    "annotate_queue": {"GET": ANNOTATORS},
    "annotate_next": {"GET": ANNOTATORS},
    "annotate_mine": {"GET": ANNOTATORS},
    # An empty form about an item the annotator holds no lease on: refused without the item (409).
    "annotate_submit": {"POST": allowed(ANNOTATORS, 409)},
    "annotate_skip": {"POST": allowed(ANNOTATORS, 409)},
    # The annotation in the URL is the annotator's own: nobody else's edit page exists for them,
    # admins included (404, not 403: an id someone else owns is not revealed).
    "annotation_edit": {
        "GET": {**ANNOTATORS, "admin": 404},
        "POST": {**allowed(ANNOTATORS, 422), "admin": 404},
    },
    # A gold item shown to the annotator: only they may answer it (anyone else: 404).
    "gold_submit": {"POST": {**allowed(ANNOTATORS, 422), "admin": 404}},
    "gold_skip": {"POST": {**allowed(ANNOTATORS, 422), "admin": 404}},
    # Excluding an annotator from a batch's statistics is the researcher's call.
    "annotator_exclude": {"POST": allowed(RESEARCHERS, 302)},
    "annotator_include": {"POST": allowed(RESEARCHERS, 302)},
    # Adjudication: researchers, or users a researcher granted the batch to (tested apart).
    "adjudication_queue": {"GET": RESEARCHERS},
    "adjudication_item": {"GET": RESEARCHERS, "POST": allowed(RESEARCHERS, 422)},
    "adjudication_to_gold": {"POST": allowed(RESEARCHERS, 404)},  # the item has no adjudication yet
    "adjudicator_grant": {"POST": allowed(RESEARCHERS, 302)},
    "assignment_overview": {"GET": ADMINS},
    "assignment_batch": {"GET": ADMINS},
    "assignment_release": {"POST": allowed(ADMINS, 302)},
    # Judges are research material: researchers import and read them; annotators never see them.
    "judges": {"GET": RESEARCHERS},
    "judge_import_scores": {"POST": allowed(RESEARCHERS, 400)},
    "judge_import_verdicts": {"POST": allowed(RESEARCHERS, 400)},
    "judge_run": {"POST": allowed(RESEARCHERS, 400)},  # an empty form: refused, nothing queued
    "report_list": {"GET": RESEARCHERS},
    "report_batch": {"GET": RESEARCHERS},
    "report_judges": {"GET": RESEARCHERS},
    "report_export": {"GET": RESEARCHERS},
    "report_item": {"GET": RESEARCHERS},
    "judge_card": {"GET": RESEARCHERS},
    "judge_card_export": {"GET": RESEARCHERS},
    "judge_disagreements": {"GET": RESEARCHERS},
    "calibration_set": {"GET": RESEARCHERS, "POST": allowed(RESEARCHERS, 400)},  # an empty form: 400
    "calibration_set_retire": {"POST": allowed(RESEARCHERS, 302)},
    "review_items": {"GET": RESEARCHERS},
    "report_plan": {"GET": RESEARCHERS},
    "review_queue_first": {"POST": allowed(ADMINS, 302)},
    # The world's batch has no judge scores: an empty draw form, the CSV and retiring all go back to the page.
    "review_draw": {"POST": allowed(ADMINS, 302)},
    "review_draw_csv": {"GET": allowed(RESEARCHERS, 302)},
    "review_draw_retire": {"POST": allowed(ADMINS, 302)},
    # Background jobs belong to whoever started them (here the admin); anyone else's is a 404.
    "job_status": {"GET": {**SIGNED_IN, "none": 404, "annotator": 404, "researcher": 404}},
    "job_download": {"GET": {**SIGNED_IN, "none": 404, "annotator": 404, "researcher": 404}},
    "job_try_again": {"POST": {**allowed(SIGNED_IN, 302), "none": 404, "annotator": 404, "researcher": 404}},
    "job_stop": {"POST": {**allowed(SIGNED_IN, 302), "none": 404, "annotator": 404, "researcher": 404}},
    # Streams are research material: researchers read them; annotators (crowd workers too) never see them.
    "stream_list": {"GET": RESEARCHERS},
    "stream_page": {"GET": RESEARCHERS},
    "stream_series_csv": {"GET": RESEARCHERS},
    "healthz": {"GET": EVERYONE},  # for load balancers: says only whether the database answers
    # Each user's own API tokens; another user's token id is a 404 (a 302 back to the list for one's own).
    "api_tokens": {"GET": SIGNED_IN},
    "api_token_new": {"POST": allowed(SIGNED_IN, 400)},  # an empty form: name and days are missing
    "api_token_revoke": {"POST": {**allowed(SIGNED_IN, 404), "admin": 302}},
    # The HTTP API. The schema and its docs page are public; a POST with an empty (non-JSON) body is a 400.
    "api-v1:openapi-json": {"GET": API_EVERYONE},
    "api-v1:openapi-view": {"GET": API_EVERYONE},
    "api-v1:api-root": {"GET": {role: 404 for role in ROLES}},
    "api-v1:me": {"GET": API_SIGNED_IN},
    "api-v1:batches": {"GET": API_RESEARCHERS, "POST": allowed(API_ADMINS, 400)},
    "api-v1:batches_create": {"GET": API_RESEARCHERS, "POST": allowed(API_ADMINS, 400)},
    "api-v1:batch": {"GET": API_RESEARCHERS},
    "api-v1:batch_items": {"POST": allowed(API_ADMINS, 400)},
    "api-v1:batch_progress": {"GET": API_RESEARCHERS},
    "api-v1:annotations": {"GET": API_RESEARCHERS},
    "api-v1:report": {"GET": API_RESEARCHERS},
    "api-v1:report_export_hf": {"POST": allowed(API_RESEARCHERS, 202)},
    "api-v1:calibration": {"GET": API_RESEARCHERS},
    "api-v1:judges": {"GET": API_RESEARCHERS},
    "api-v1:review_items": {"GET": API_RESEARCHERS},
    "api-v1:judge_scores": {"POST": allowed(API_RESEARCHERS, 400)},
    "api-v1:judge_verdicts": {"POST": allowed(API_RESEARCHERS, 400)},
    "api-v1:batch_judge_scores": {"GET": API_RESEARCHERS},
    "api-v1:batch_pairwise_verdicts": {"GET": API_RESEARCHERS},
    # One path with GET, PUT and DELETE (PUT, DELETE and a found set: tests/annotator/api/test_calibration_sets.py);
    # the world's batch has no calibration set, so past the role check a GET is a 404; a POST there is a 405.
    **{
        name: {"GET": {**API_RESEARCHERS, "researcher": 404, "admin": 404}}
        for name in ("api-v1:calibration_set", "api-v1:calibration_set_mark", "api-v1:calibration_set_retire")
    },
    # One path with GET (researchers; no draw in force: 404), POST and DELETE (admins; an empty body: 400).
    **{
        name: {"GET": {**API_RESEARCHERS, "researcher": 404, "admin": 404}, "POST": allowed(API_ADMINS, 400)}
        for name in ("api-v1:review_draw", "api-v1:review_draw_make", "api-v1:review_draw_retire")
    },
    # Streams: researchers make and feed them (an empty, non-JSON body: 400) and read their series.
    **{
        name: {"GET": API_RESEARCHERS, "POST": allowed(API_RESEARCHERS, 400)}
        for name in ("api-v1:streams", "api-v1:streams_create")
    },
    "api-v1:stream": {"GET": API_RESEARCHERS},
    "api-v1:stream_traces": {"POST": allowed(API_RESEARCHERS, 400)},
    "api-v1:stream_annotations": {"POST": allowed(API_RESEARCHERS, 400)},
    "api-v1:stream_calibration": {"GET": API_RESEARCHERS},
    "api-v1:stream_alerts": {"GET": API_RESEARCHERS},
    # API jobs belong to whoever started them (here the admin), as on the job page.
    "api-v1:job": {"GET": {**API_SIGNED_IN, "none": 404, "annotator": 404, "researcher": 404}},
    "api-v1:job_result": {"GET": {**API_SIGNED_IN, "none": 404, "annotator": 404, "researcher": 404}},
    # Studies. The matrix batch has no consent text and no limits, so consent and the end page send
    # an annotator on to the next item; the instructions are always readable.
    "study_consent": {"GET": allowed(ANNOTATORS, 302), "POST": allowed(ANNOTATORS, 302)},
    "study_instructions": {"GET": ANNOTATORS, "POST": allowed(ANNOTATORS, 302)},
    "study_done": {"GET": allowed(ANNOTATORS, 302)},
    # Public link pages: the token is the credential. The study link here carries no worker id (403).
    "study_entry": {"GET": allowed(EVERYONE, 403)},
    # The demo's new-worker link exists on a DEBUG server only (tests/annotator/studies/test_demo_links.py).
    "study_new_worker": {"GET": allowed(EVERYONE, 404)},
    # Someone signed in gets no second account from a link (409); an empty form from anyone else is a 422.
    "invite": {"GET": EVERYONE, "POST": {**allowed(SIGNED_IN, 409), "anonymous": 422}},
    "signin_link": {"GET": EVERYONE, "POST": {**allowed(SIGNED_IN, 409), "anonymous": 422}},
    "studies": {"GET": ADMINS},
    "study_link_new": {"POST": allowed(ADMINS, 422)},
    "invite_link_new": {"POST": allowed(ADMINS, 422)},
    "annotators_new": {"POST": allowed(ADMINS, 422)},
    "link_revoke": {"POST": allowed(ADMINS, 302)},
    "study_settings": {"POST": allowed(ADMINS, 302)},
    "study_quality": {"POST": allowed(ADMINS, 422)},  # an empty form: refused, saying why
    "study_workers_csv": {"GET": ADMINS},
    "prolific_review": {"POST": allowed(ADMINS, 422)},
    # Prolific calls it without a session or CSRF token: the HMAC signature is checked instead (none here: 401).
    "prolific_webhook": {"POST": {role: 401 for role in ROLES}},
}

# Every export format is requested (taken from the view, so a new format is checked too).
EXPORT_FORMATS = tuple(EXPORTS)


def app_url_patterns(patterns=None, prefix="", params=(), namespace=""):
    """(name, route, path parameter names) of every URL, from the resolver, without Django's admin.
    Names inside a namespaced include are given as ``namespace:name``, as ``reverse`` takes them."""
    found = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        names = tuple(params) + tuple(entry.pattern.regex.groupindex)
        if isinstance(entry, URLResolver):
            if entry.app_name == "admin" or entry.namespace == "admin":
                continue
            inner = ":".join(n for n in (namespace, entry.namespace) if n)
            found += app_url_patterns(entry.url_patterns, route, names, inner)
        elif isinstance(entry, URLPattern):
            found.append(
                (f"{namespace}:{entry.name}" if namespace and entry.name else entry.name, route, names)
            )
    return found


@pytest.fixture
def world():
    """Real objects for every path parameter: a batch open to everybody, with the annotator's
    own annotation and a live lease, and the people of each role."""
    users = {role: make_user(f"user-{role}", role=role) for role in ROLES if role != "anonymous"}
    other = make_user("other-annotator", role="annotator")
    batch = make_batch("matrix", n_items=4)
    items = list(batch.items.order_by("position"))
    own = make_annotation(items[0], users["annotator"], {"coherence": 3}, comment="mine")
    theirs = make_annotation(items[1], other, {"coherence": 2}, comment="someone else's words")
    lease = item_next_for_annotator(batch=batch, annotator=other)
    token, _ = api_token_create(user=users["admin"], name="admin's", days=1)
    gold = models.GoldItem.objects.create(
        batch=batch, item_id="g1", kind="check", prompt="p", response="r", scores={"coherence": 2}
    )
    answer = models.GoldAnswer.objects.create(
        gold_item=gold, annotator=users["annotator"], shown_at=lease.leased_at
    )
    models.AnnotatorStanding.objects.create(batch=batch, annotator=other)
    params = {
        "batch_id": batch.pk,
        "item_pk": items[3].pk,
        "pk": own.pk,
        "assignment_id": lease.pk,
        "fmt": "json",
        "token_id": token.pk,
        "answer_pk": answer.pk,
        "user_pk": other.pk,
    }
    params.update(study_link_params(batch, users["admin"]))
    judge = models.Judge.objects.create(name="matrix-judge")
    models.JudgeScore.objects.create(
        judge=judge, item=items[0], dimension="coherence", raw_value=3, scale_min=1, scale_max=5, value=3
    )
    params["judge_id"] = judge.pk
    params["stream_name"] = stream_create(
        name="matrix-stream",
        human_rate=0.5,
        k=3,
        window="day",
        judges=["matrix-judge"],
        created_by=users["admin"],
    ).name
    params["card_fmt"] = "html"
    Job = getattr(models, "Job", None)
    if Job is not None:
        job = Job.objects.create(
            kind=Job.EXPORT,
            label="export",
            created_by=users["admin"],
            state=Job.DONE,
            output=b"{}",
            output_name="report.json",
            output_type="application/json",
        )
        params["job_id"] = job.pk
    keys = {role: api_token_create(user=user, name="matrix", days=1)[1] for role, user in users.items()}
    return {
        "users": users,
        "keys": keys,
        "other": other,
        "batch": batch,
        "items": items,
        "own": own,
        "theirs": theirs,
        "params": params,
    }


def study_link_params(batch, admin) -> dict:
    """Live links of each kind (their tokens are the path parameters of the public link pages)."""
    _study, study_token = study_link_create(batch=batch, platform="prolific", quota=2, completion_code="C0DE")
    invite, invite_token = invite_create(batches=[batch])
    [account] = annotators_add(rows=[("bulk-person", "bulk@example.org")], batch=batch)
    return {
        "study_token": study_token,
        "invite_token": invite_token,
        "signin_token": account.token,
        "kind": "invite",
        "link_id": invite.pk,
    }


def client_for(world, role: str, name: str = "") -> Client:
    """A session for the pages; for the API (``api-v1:`` names), the role's own API token instead."""
    if name.startswith("api-v1:"):
        key = world["keys"].get(role)
        return Client(headers={"Authorization": f"Bearer {key}"} if key else {})
    client = Client()
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


def answer(response) -> object:
    if response.status_code == 302 and urlsplit(response["Location"]).path == reverse("login"):
        return LOGIN
    return response.status_code


def urls_of(world, name: str, params: tuple[str, ...]) -> list[str]:
    unknown = [p for p in params if p not in world["params"]]
    assert not unknown, f"URL {name!r}: no test object for path parameter(s) {unknown}; add one to world()"
    if "fmt" in params:
        return [
            reverse(name, kwargs={**{p: world["params"][p] for p in params}, "fmt": f})
            for f in EXPORT_FORMATS
        ]
    return [reverse(name, kwargs={p: world["params"][p] for p in params})]


def test_every_url_is_in_the_table():
    patterns = app_url_patterns()
    unnamed = [route for name, route, _ in patterns if not name]
    assert not unnamed, (
        f"URL(s) without a name cannot be checked: {unnamed}; give them a name and add them to ACCESS"
    )
    missing = sorted({name for name, _, _ in patterns} - set(ACCESS))
    assert not missing, (
        f"URL name(s) {missing} are not in ACCESS of tests/annotator/test_access_matrix.py: "
        "add each with the answer every role must get"
    )


def test_every_role_gets_exactly_its_answer(world):
    failures = []
    checked = 0
    for name, _route, params in app_url_patterns():
        methods = ACCESS[name]
        for method, expected in methods.items():
            assert set(expected) == set(ROLES), f"{name} {method}: ACCESS must answer for each of {ROLES}"
        for url in urls_of(world, name, params):
            for role in ROLES:
                denial = next((a for e in methods.values() if (a := e[role]) in (LOGIN, 403, 404)), None)
                for method in ("GET", "POST"):
                    client = client_for(world, role, name)
                    got = answer(client.post(url) if method == "POST" else client.get(url))
                    checked += 1
                    if method in methods:
                        if got != methods[method][role]:
                            failures.append(
                                f"{method} {url} as {role}: got {got}, expected {methods[method][role]}"
                            )
                    elif got not in (405, denial):
                        failures.append(
                            f"{method} {url} ({'/'.join(methods)} only) as {role}: got {got}, expected 405"
                        )
    assert not failures, "\n".join(failures)
    print(f"access matrix: {checked} requests (url x role x method) checked")


def test_another_annotators_annotation_is_404_whatever_the_method(world):
    client = client_for(world, "annotator")
    url = reverse("annotation_edit", args=[world["theirs"].pk])
    assert client.get(url).status_code == 404
    response = client.post(url, {"coherence": "5", "comment": "overwritten"})
    assert response.status_code == 404
    theirs = Annotation.objects.get(pk=world["theirs"].pk)
    assert theirs.comment == "someone else's words"
    assert not theirs.revisions.exists()
    # Ids that do not exist look the same as ids someone else owns.
    missing = max(Annotation.objects.values_list("pk", flat=True)) + 1
    assert client.get(reverse("annotation_edit", args=[missing])).status_code == 404


def test_own_history_shows_only_own_annotations(world):
    response = client_for(world, "annotator").get(reverse("annotate_mine", args=[world["batch"].pk]))
    assert response.status_code == 200
    body = response.content.decode()
    assert world["items"][0].prompt in body
    assert world["items"][0].item_id not in body  # a neutral number, never the file's item id
    assert world["items"][1].prompt not in body  # the other annotator's item
    assert [row["annotation"] for row in response.context["annotations"]] == [world["own"]]


def test_batches_restricted_to_other_annotators_are_404(world):
    closed_to_me = make_batch("restricted", n_items=2)
    closed_to_me.annotators.add(world["other"])
    item = closed_to_me.items.first()
    client = client_for(world, "annotator")
    assert client.get(reverse("annotate_next", args=[closed_to_me.pk])).status_code == 404
    assert client.get(reverse("annotate_mine", args=[closed_to_me.pk])).status_code == 404
    response = client.post(reverse("annotate_submit", args=[item.pk]), {"coherence": "3"})
    assert response.status_code == 404
    assert client.post(reverse("annotate_skip", args=[item.pk]), {"skip_reason": "x"}).status_code == 404
    assert not Annotation.objects.filter(item__batch=closed_to_me).exists()
    assert not Assignment.objects.filter(item__batch=closed_to_me).exists()
    # The annotator it is restricted to gets it.
    other = Client()
    other.force_login(world["other"])
    assert other.get(reverse("annotate_next", args=[closed_to_me.pk])).status_code == 200


def test_closed_batches_are_404_to_annotators(world):
    Batch.objects.filter(pk=world["batch"].pk).update(is_open=False)
    client = client_for(world, "annotator")
    assert client.get(reverse("annotate_next", args=[world["batch"].pk])).status_code == 404
    assert client.post(reverse("annotate_submit", args=[world["items"][3].pk]), {}).status_code == 404


@pytest.mark.parametrize("name", ["annotate_next", "annotate_mine", "assignment_batch", "report_batch"])
def test_unknown_batch_ids_are_404_for_allowed_roles(world, name):
    missing = Batch.objects.order_by("-pk").first().pk + 1
    assert client_for(world, "admin").get(reverse(name, args=[missing])).status_code == 404


def test_unknown_export_format_is_404(world):
    url = reverse("report_export", args=[world["batch"].pk, "exe"])
    assert client_for(world, "researcher").get(url).status_code == 404


def test_the_matrix_sees_nested_urls():
    # The walk descends into include()s (and skips only Django's admin): a route under an
    # include is found with its full path and its parameters.
    from django.urls import include, path

    nested = [
        path("outer/<int:batch_id>/", include([path("inner/<int:item_pk>/", lambda r: None, name="x")]))
    ]
    assert app_url_patterns(nested) == [
        ("x", "outer/<int:batch_id>/inner/<int:item_pk>/", ("batch_id", "item_pk"))
    ]
    assert resolve("/django-admin/").app_name == "admin"
    assert all(not route.startswith("django-admin/") for _, route, _ in app_url_patterns())


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/", "/\\evil.example/", "javascript:alert(1)"]
)
def test_login_never_sends_anyone_off_site(world, target):
    response = Client().post(
        reverse("login") + "?next=" + target,
        {"username": "user-annotator", "password": PASSWORD, "next": target},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("home")
    # The login redirect for a protected page stays on the site too.
    anonymous = Client().get(reverse("report_list"))
    assert urlsplit(anonymous["Location"]).netloc == ""
