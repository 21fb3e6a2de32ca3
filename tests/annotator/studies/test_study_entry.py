"""Crowd workers arrive by a study link: one pseudonymous account per worker id, limited to the
study's batch; forged, expired, revoked and malformed links get a clear refusal."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from annotator.models import AccountScope, Annotation, Enrolment, Item, StudyLink
from annotator.services.tokens import token_hash
from annotator.studies.services.links import link_revoke
from tests.annotator.study_support import (
    PID_A,
    PID_B,
    RATING,
    arrive,
    entry_url,
    prolific_link,
    rate_next,
    start,
)
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    batch = make_batch("crowd", n_items=6)
    link, token = prolific_link(batch)
    return batch, link, token


def test_the_same_worker_id_always_returns_to_the_same_account(study):
    batch, _link, token = study
    first, response = arrive(token, PID_A)
    assert response.status_code == 302 and response["Location"] == reverse("annotate_next", args=[batch.pk])
    again, _ = arrive(token, PID_A, session="sess2")  # a new browser, a new Prolific session
    users = {first.session["_auth_user_id"], again.session["_auth_user_id"]}
    assert len(users) == 1
    enrolment = Enrolment.objects.get(batch=batch, worker_id=PID_A)
    assert (enrolment.platform, enrolment.platform_study_id, enrolment.platform_session_id) == (
        "prolific",
        "study1",
        "sess2",
    )
    assert (
        Enrolment.objects.count() == 1 and get_user_model().objects.filter(scope__isnull=False).count() == 1
    )


def test_two_worker_ids_at_once_are_two_accounts_that_share_nothing(study):
    batch, _link, token = study
    a, _ = arrive(token, PID_A)
    b, _ = arrive(token, PID_B)
    assert a.session["_auth_user_id"] != b.session["_auth_user_id"]
    for client in (a, b):
        start(client, batch)
    assert rate_next(a, batch).status_code == 302
    assert rate_next(b, batch).status_code == 302
    items = {
        pid: set(
            Annotation.objects.filter(annotator__enrolments__worker_id=pid).values_list("item_id", flat=True)
        )
        for pid in (PID_A, PID_B)
    }
    assert all(len(v) == 1 for v in items.values())
    # b's own-annotations page lists only b's work.
    html = b.get(reverse("annotate_mine", args=[batch.pk])).content.decode()
    a_item = Annotation.objects.get(annotator__enrolments__worker_id=PID_A).item
    b_item = Annotation.objects.get(annotator__enrolments__worker_id=PID_B).item
    # Items are listed by prompt and a neutral number, never by the file's item id (blind rating).
    assert b_item.prompt in html and b_item.item_id not in html
    assert a_item.prompt == b_item.prompt or a_item.prompt not in html


def test_workers_get_a_pseudonym_never_their_platform_id(study):
    batch, _link, token = study
    client, _ = arrive(token, PID_A)
    user = get_user_model().objects.get(pk=client.session["_auth_user_id"])
    assert PID_A not in user.username and user.username.startswith("worker-")
    assert not user.has_usable_password()
    start(client, batch)
    rate_next(client, batch)
    researcher = Client()
    researcher.force_login(get_user_model().objects.create_user("r", is_staff=True))
    for fmt in ("scores.csv", "annotations.csv", "json"):
        response = researcher.get(reverse("report_export", args=[batch.pk, fmt]))
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert PID_A not in body.decode()
        if fmt != "json":
            assert user.username in body.decode()
    report = researcher.get(reverse("report_batch", args=[batch.pk])).content.decode()
    assert PID_A not in report


def test_forged_token_is_404_and_creates_nothing(study):
    _batch, _link, token = study
    for forged in ("not-a-token", token[:-1] + ("A" if token[-1] != "A" else "B")):
        _, response = arrive(forged, PID_A)
        assert response.status_code == 404
        assert "does not exist" in response.content.decode()
    assert not Enrolment.objects.exists()


def test_expired_and_revoked_study_links_are_403(study):
    _batch, link, token = study
    StudyLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    _, response = arrive(token, PID_A)
    assert response.status_code == 403 and "expired" in response.content.decode()
    StudyLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() + timedelta(days=1))
    link_revoke(link=link)
    _, response = arrive(token, PID_A)
    assert response.status_code == 403 and "withdrawn" in response.content.decode()
    assert not Enrolment.objects.exists()


@pytest.mark.parametrize("pid", [None, "", "short", "5f0c1a2b3c4d5e6f7a8b9c0d'--", "x" * 200])
def test_malformed_worker_ids_are_403_with_what_to_do(study, pid):
    _batch, _link, token = study
    response = Client().get(entry_url(token, pid))
    assert response.status_code == 403
    assert "open the study again from Prolific" in response.content.decode()
    assert not Enrolment.objects.exists()


def test_the_link_as_pasted_into_prolific_says_it_opens_from_there(study):
    """A researcher clicking the printed template link learns why it does not open here, and how to try it."""
    _batch, _link, token = study
    response = Client().get(entry_url(token, "{{%PROLIFIC_PID%}}"))
    page = response.content.decode()
    assert response.status_code == 403 and "This link opens from Prolific" in page
    assert "This is the study link to paste into Prolific" in page
    assert "a made-up PROLIFIC_PID (24 hex digits, 0-9 and a-f)" in page
    assert not Enrolment.objects.exists()


def _printed_link_filled(token: str, **ids) -> str:
    """The printed Prolific link with the given placeholders replaced, the rest left as printed."""
    query = {
        "PROLIFIC_PID": "{{%PROLIFIC_PID%}}",
        "STUDY_ID": "{{%STUDY_ID%}}",
        "SESSION_ID": "{{%SESSION_ID%}}",
    }
    query.update(ids)
    return reverse("study_entry", args=[token]) + "?" + urlencode(query)


def test_the_advice_on_the_printed_link_names_all_three_ids_and_following_it_works(study):
    """Replacing only the participant id left the other two placeholders, which were refused; a second
    made-up id in the same session id was refused too. The page names all three, and following it opens."""
    _batch, _link, token = study
    page = Client().get(_printed_link_filled(token)).content.decode()
    assert "any STUDY_ID" in page and "a new SESSION_ID for each participant" in page
    assert "try-new-worker" not in page  # the new-worker link is for development servers only
    # Only the participant id filled in: still the printed link, with the same advice (not "invalid").
    half = Client().get(_printed_link_filled(token, PROLIFIC_PID="a1" * 12))
    assert half.status_code == 403 and "a new SESSION_ID for each participant" in half.content.decode()
    # As advised: two made-up participant ids, each with its own session id, are two participants.
    for pid, session in (("0a" * 12, "try-1"), ("0b" * 12, "try-2")):
        opened = Client().get(_printed_link_filled(token, PROLIFIC_PID=pid, STUDY_ID="x", SESSION_ID=session))
        assert opened.status_code == 302
    assert Enrolment.objects.count() == 2


@override_settings(DEBUG=True)
def test_on_a_debug_server_the_printed_link_offers_the_new_worker_link(study):
    _batch, _link, token = study
    response = Client().get(_printed_link_filled(token))
    assert response.status_code == 403
    href = f'href="http://testserver{reverse("study_new_worker", args=[token])}"'
    assert href in response.content.decode()
    first = Client().get(reverse("study_new_worker", args=[token]), follow=True)
    second = Client().get(reverse("study_new_worker", args=[token]), follow=True)
    assert first.status_code == second.status_code == 200
    assert Enrolment.objects.count() == 2


def test_malformed_session_id_is_403(study):
    _batch, _link, token = study
    _, response = arrive(token, PID_A, session="<script>")
    assert response.status_code == 403 and not Enrolment.objects.exists()


def test_tokens_are_random_and_stored_only_as_a_hash(study):
    batch, link, token = study
    assert len(token) >= 43  # 32 bytes of secrets.token_urlsafe
    assert link.token_hash == token_hash(token) and token not in link.token_hash
    _other, other_token = prolific_link(batch)
    assert other_token != token
    assert not StudyLink.objects.filter(token_hash=token).exists()


@override_settings(ANNOTATOR_LINK_OPENS_PER_MINUTE=3)
def test_opening_links_is_rate_limited_per_address(study):
    _batch, _link, token = study
    client = Client()
    codes = [client.get(entry_url(token, PID_A)).status_code for _ in range(3)]
    assert codes == [302, 302, 302]
    refused = client.get(entry_url(token, PID_A))
    assert refused.status_code == 429 and refused["Retry-After"] == "60"
    # Another address is not held back.
    assert Client(REMOTE_ADDR="10.1.2.3").get(entry_url(token, PID_B)).status_code == 302
    # Invite pages count against the same limit.
    assert client.get(reverse("invite", args=["whatever"])).status_code == 429


def test_a_worker_is_limited_to_the_study_batch_everywhere(study):
    batch, _link, token = study
    other = make_batch("other-open-batch", n_items=2)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    other_item = other.items.first()
    assert client.get(reverse("annotate_next", args=[other.pk])).status_code == 404
    assert client.get(reverse("annotate_mine", args=[other.pk])).status_code == 404
    assert client.get(reverse("study_instructions", args=[other.pk])).status_code == 404
    assert client.get(reverse("study_consent", args=[other.pk])).status_code == 404
    assert client.post(reverse("annotate_submit", args=[other_item.pk]), RATING).status_code == 404
    assert (
        client.post(reverse("annotate_skip", args=[other_item.pk]), {"skip_reason": "x"}).status_code == 404
    )
    queue = client.get(reverse("annotate_queue")).content.decode()
    assert batch.name in queue and other.name not in queue
    assert not Annotation.objects.filter(item__batch=other).exists()
    # Researcher and admin pages stay closed.
    assert client.get(reverse("report_batch", args=[batch.pk])).status_code == 403
    assert client.get(reverse("studies")).status_code == 403


def test_a_scope_whose_batch_was_deleted_opens_nothing(study):
    batch, _link, token = study
    client, _ = arrive(token, PID_A)
    other = make_batch("still-open", n_items=1)
    batch.delete()
    assert AccountScope.objects.count() == 1
    assert client.get(reverse("annotate_next", args=[other.pk])).status_code == 404


def test_study_link_command_prints_the_url_to_paste(study, tmp_path):
    batch, _link, _token = study
    consent = tmp_path / "consent.md"
    consent.write_text("Do you agree?")
    out, err = StringIO(), StringIO()
    call_command(
        "study_link",
        batch.name,
        "--platform",
        "prolific",
        "--quota",
        "20",
        "--completion-code",
        "CODE1",
        "--screen-out-code",
        "SO1",
        "--consent",
        str(consent),
        "--base-url",
        "https://eval.example.org",
        stdout=out,
        stderr=err,
    )
    url = out.getvalue().strip()
    assert url.startswith("https://eval.example.org/study/")
    assert url.endswith(
        "/?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    token = urlsplit(url).path.split("/")[2]
    link = StudyLink.objects.get(token_hash=token_hash(token))
    assert (link.quota, link.completion_code, link.screen_out_code) == (20, "CODE1", "SO1")
    batch.refresh_from_db()
    assert batch.consent_text == "Do you agree?"
    # The printed link works once a platform fills in the ids.
    filled = (
        url.replace("{{%PROLIFIC_PID%}}", PID_B)
        .replace("{{%STUDY_ID%}}", "s")
        .replace("{{%SESSION_ID%}}", "t")
    )
    assert Client().get(urlsplit(filled).path + "?" + urlsplit(filled).query).status_code == 302


def test_generic_worker_id_mode(study):
    batch, _link, _token = study
    out = StringIO()
    call_command(
        "study_link",
        batch.name,
        "--platform",
        "generic",
        "--quota",
        "5",
        "--completion-code",
        "MT1",
        stdout=out,
        stderr=StringIO(),
    )
    url = urlsplit(out.getvalue().strip())
    assert parse_qs(url.query) == {
        "worker_id": ["WORKER_ID"],
        "study_id": ["STUDY_ID"],
        "session_id": ["SESSION_ID"],
    }
    client = Client()
    assert client.get(url.path + "?worker_id=A1B2C3D4E5MTURK").status_code == 302
    assert Enrolment.objects.get(worker_id="A1B2C3D4E5MTURK").platform == "generic"
    assert client.get(url.path + "?worker_id=bad id!").status_code == 403
    # The link as printed, opened directly: its placeholder is not a worker called WORKER_ID.
    unfilled = client.get(url.path + "?" + url.query)
    assert unfilled.status_code == 403 and "the link opens only from there" in unfilled.content.decode()
    assert not Enrolment.objects.filter(worker_id="WORKER_ID").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--quota", "0", "--completion-code", "X"], "at least 1"),
        (["--quota", "5", "--completion-code", " "], "completion code is required"),
        (
            ["--quota", "5", "--completion-code", "X", "--completion-url", "javascript:alert(1)"],
            "not an http",
        ),
        (["--quota", "5", "--completion-code", "X", "--days", "0"], "1 to 366 days"),
    ],
)
def test_study_link_command_refuses_bad_options(study, args, message):
    batch, _link, _token = study
    with pytest.raises(CommandError, match=message):
        call_command("study_link", batch.name, *args, stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="No batch named"):
        call_command("study_link", "nope", "--quota", "1", "--completion-code", "X", stdout=StringIO())


def test_a_crowd_worker_cannot_hold_an_api_token(study):
    from annotator.services.api_tokens import api_token_create

    _batch, _link, token = study
    client, _ = arrive(token, PID_A)
    assert client.get(reverse("api_tokens")).status_code == 403
    assert client.post(reverse("api_token_new"), {"name": "mine", "days": "30"}).status_code == 403
    assert "API tokens" not in client.get(reverse("home")).content.decode()
    worker = get_user_model().objects.get(scope__isnull=False)
    assert not worker.api_tokens.exists()
    _, key = api_token_create(user=worker, name="made elsewhere", days=1)  # even one made for it is refused
    assert Client(headers={"Authorization": f"Bearer {key}"}).get("/api/v1/me").status_code == 401


def test_the_api_token_command_refuses_a_link_account(study):
    _batch, _link, token = study
    arrive(token, PID_A)
    worker = get_user_model().objects.get(scope__isnull=False)
    with pytest.raises(CommandError, match="such accounts hold no API token"):
        call_command("api_token", worker.username, stdout=StringIO(), stderr=StringIO())


def test_the_studies_page_shows_a_live_link_of_a_complete_batch_as_full(study):
    """ "live" alone said nothing of a batch with every item complete: workers would meet "study full"."""
    batch, link, _token = study
    client = Client()
    client.force_login(make_user("boss", role="admin"))

    def state() -> str:
        html = client.get(reverse("studies")).content.decode()
        return re.search(r'<td class="link-state">(.*?)</td>', html).group(1)

    assert state() == "live"  # items left to hand out
    Item.objects.filter(batch=batch).update(n_annotations=batch.k)
    assert "live" in state() and "full: no item left to hand out" in state()
    link_revoke(link=link)
    assert state() == "revoked"  # a closed link is not also called full
