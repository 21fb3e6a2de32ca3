"""Every count a crowd worker sees is the count the study pays for: their rated items (annotations),
the one rule of ``counted_annotations``. The quota, the rating page, the queue, the end page, the
workers CSV's ``items_done`` and the Prolific review's per-item bonus agree; the checks a worker
answered come on top of the quota, as the instructions say, and the end page names them apart
(``checks_done`` in the CSV). The rating page names the second the session stops."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.models import Enrolment, GoldAnswer, GoldItem, QualityRule
from annotator.quality.services.gold import check_due, check_offset
from annotator.studies.prolific.services.review import bonus_targets, review_plan
from annotator.studies.selectors import PAYMENT_HEADER
from tests.annotator.studies.prolific_fake import Fake
from tests.annotator.study_support import PID_A, RATING, arrive, prolific_link, start
from tests.factories import make_batch, make_gold_items, make_user

pytestmark = pytest.mark.django_db
DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def with_checks(name: str, n_checks: int = 2, check_every: int = 2):
    batch = make_batch(name, n_items=6)
    QualityRule.objects.create(batch=batch, training_items=0, check_every=check_every)
    make_gold_items(
        batch,
        "check",
        n_checks,
        item_id="c{n}",
        prompt="Check {n}",
        response="Take the ferry.",
        scores=dict.fromkeys(DIMS, 4),
    )
    return batch


def you_rated(html: str) -> int:
    return int(re.search(r"You rated <strong>(\d+)</strong>", html).group(1))


def queue_count(client, batch) -> str:
    html = client.get(reverse("annotate_queue")).content.decode()
    row = re.search(rf"<strong>{re.escape(batch.name)}</strong></td>\s*<td[^>]*>(.*?)</td>", html, re.S)
    return row.group(1)


def rate_until_the_end(client, batch) -> list[int]:
    """Rate every form the worker is given (items and checks) until the visit ends; the "You rated"
    each form showed."""
    shown = []
    while (page := client.get(reverse("annotate_next", args=[batch.pk]))).status_code == 200:
        shown.append(you_rated(page.content.decode()))
        answer = GoldAnswer.objects.filter(submitted_at__isnull=True).first()
        if answer is not None:  # a check, shown like any item
            scores = {k: v for k, v in RATING.items() if k.startswith("score")}
            client.post(reverse("gold_submit", args=[answer.pk]), scores)
        else:
            client.post(reverse("annotate_submit", args=[page.context["item"].pk]), RATING)
    assert page.url == reverse("study_done", args=[batch.pk])
    return shown


def test_a_quota_4_link_with_a_check_ends_with_the_4_items_the_review_pays_for():
    """The walk's "You rated 5" on a quota-4 link: one check in every four came after the third item,
    so the worker filled in five forms, while the quota and the review count four items."""
    batch = with_checks("quota-4", check_every=4)
    _link, token = prolific_link(batch, quota=4)
    client, _ = arrive(token, PID_A, study="st-quota-4", session="sub-quota-4")
    start(client, batch)
    shown = rate_until_the_end(client, batch)
    assert len(shown) == 5 and GoldAnswer.objects.filter(submitted_at__isnull=False).count() == 1
    # The check comes after `offset` of the block's three ratings; it is not a rated item, so the count
    # after it stays where it was.
    worker = GoldAnswer.objects.get().annotator
    offset = check_offset(batch=batch, annotator=worker, block=0, check_every=4)
    assert shown == [*range(offset + 1), *range(offset, 4)]

    done = client.get(reverse("study_done", args=[batch.pk])).content.decode()
    said = re.search(r'<p id="items-done">(.*?)</p>', done, re.S).group(1).split()
    assert " ".join(said) == "You rated 4 items. You also answered 1 quality check, not counted among them."
    assert queue_count(client, batch).strip() == "4"

    fake = Fake(study_id="st-quota-4")
    fake.add("sub-quota-4", PID_A)
    with fake.client() as prolific:
        review = review_plan(batch=batch, study_id="st-quota-4", client=prolific, approve=True)
    assert [d.action for d in review.decisions] == ["approve"]
    owed, _ = bonus_targets(review=review, per_item=Decimal("0.25"))
    assert [o.amount for o in owed] == [Decimal("1.00")]  # 4 items at 0.25: the end page's 4

    client.force_login(make_user("admin", role="admin"))
    rows = list(
        csv.reader(io.StringIO(client.get(reverse("study_workers_csv", args=[batch.pk])).content.decode()))
    )
    assert rows[0] == list(PAYMENT_HEADER) and rows[0][-1] == "checks_done"
    row = dict(zip(rows[0], rows[1], strict=True))
    assert (row["items_done"], row["checks_done"], row["state"]) == ("4", "1", "done")


def test_a_check_comes_at_a_place_in_its_block_the_worker_cannot_predict():
    """Checks are not counted among the rated items, so a fixed place in every block would tell a worker
    who counts when the next check comes: each worker and block draws its own place."""
    batch = with_checks("unpredictable", check_every=5)
    workers = [make_user(f"w{n}") for n in range(40)]
    offsets = {
        check_offset(batch=batch, annotator=w, block=b, check_every=5) for w in workers for b in range(3)
    }
    assert offsets == {1, 2, 3, 4}
    one = workers[0]
    places = [check_offset(batch=batch, annotator=one, block=b, check_every=5) for b in range(12)]
    assert len(set(places)) > 1  # not one place for every block of the same worker
    assert places == [check_offset(batch=batch, annotator=one, block=b, check_every=5) for b in range(12)]
    # one check per block of four ratings, at its drawn place
    for block, place in enumerate(places[:3]):
        due = [
            r for r in range(16) if check_due(rated=r, shown=block, check_every=5, batch=batch, annotator=one)
        ]
        assert due[0] == 4 * block + place


def test_the_time_up_end_page_counts_the_items_and_names_the_checks_apart():
    batch = with_checks("time-up-count", check_every=2)
    _link, token = prolific_link(batch, quota=4, max_minutes=20)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    for _ in range(3):  # an item, a check, an item
        page = client.get(reverse("annotate_next", args=[batch.pk]))
        answer = GoldAnswer.objects.filter(submitted_at__isnull=True).first()
        if answer is not None:
            scores = {k: v for k, v in RATING.items() if k.startswith("score")}
            client.post(reverse("gold_submit", args=[answer.pk]), scores)
        else:
            client.post(reverse("annotate_submit", args=[page.context["item"].pk]), RATING)
    Enrolment.objects.update(started_at=timezone.now() - timedelta(minutes=21))
    done = client.get(reverse("annotate_next", args=[batch.pk]), follow=True).content.decode()
    said = " ".join(re.search(r'<p id="items-done">(.*?)</p>', done, re.S).group(1).split())
    assert said == (
        "The session has reached its time limit. You rated 2 items, and they are kept. "
        "You also answered 1 quality check, not counted among them."
    )


def test_no_edit_link_for_a_worker_who_answered_only_a_check():
    """The edit list holds annotations only: no link to an empty list, and a count of 0 rated items."""
    batch = with_checks("only-check")
    _link, token = prolific_link(batch, quota=3)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    worker = Enrolment.objects.get(batch=batch).user
    now = timezone.now()
    GoldAnswer.objects.create(
        gold_item=GoldItem.objects.first(), annotator=worker, shown_at=now, submitted_at=now
    )
    cell = queue_count(client, batch)
    assert cell.strip() == "0", cell  # a check is not a rated item


@pytest.mark.parametrize("checks, said", [(2, True), (0, False)])
def test_the_instructions_say_checks_may_come_on_top_of_the_quota(checks, said):
    batch = with_checks(f"quota-{checks}", n_checks=checks)
    _link, token = prolific_link(batch, quota=4)
    client, _ = arrive(token, PID_A)
    html = client.get(reverse("study_instructions", args=[batch.pk])).content.decode()
    assert "You will rate up to 4 items" in html
    assert ("quality checks may come on top" in html) is said


def test_the_rating_page_names_the_second_the_session_stops():
    """A deadline of hh:mm:50 is not shown as hh:mm, a time the page would still be open after."""
    batch = make_batch("stop-time", n_items=3)
    _link, token = prolific_link(batch, quota=2, max_minutes=20)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    deadline = (timezone.now() + timedelta(minutes=10)).replace(second=50, microsecond=0)
    started = deadline - timedelta(minutes=20)
    Enrolment.objects.update(started_at=started)
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    stop = re.search(
        r'\(until <time class="local-time" data-seconds datetime="([^"]+)">([^<]+)</time>\)', html
    )
    assert stop is not None, html
    assert datetime.fromisoformat(stop.group(1)) == deadline
    assert stop.group(2) == deadline.astimezone(UTC).strftime("%H:%M:50 UTC")


def test_a_worker_who_answered_only_a_check_is_not_promised_a_code_when_time_runs_out():
    """The time-up notice's button promises the code only after a rated item, as the end page gives it:
    an answered check is not one."""
    batch = with_checks("only-check-time", check_every=2)
    _link, token = prolific_link(batch, quota=4, max_minutes=20)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    worker = Enrolment.objects.get(batch=batch).user
    now = timezone.now()
    GoldAnswer.objects.create(
        gold_item=GoldItem.objects.first(), annotator=worker, shown_at=now, submitted_at=now
    )
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    notice = re.search(r'<div [^>]*id="session-over".*?</div>', html, re.S).group(0)
    assert re.search(r">\s*Finish\s*</a>", notice) and "see your code" not in notice
    item = client.get(reverse("annotate_next", args=[batch.pk])).context["item"]
    client.post(reverse("annotate_submit", args=[item.pk]), RATING)  # a rated item: now the code is earned
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert "Finish and see your code" in html
