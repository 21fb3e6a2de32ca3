"""Every count a crowd worker sees includes the checks they answered, so no figure tells a check
apart: the rating page, the queue and the end page agree. The researcher's workers CSV keeps
``items_done`` as the real items and gives the checks in ``checks_done``. The instructions say checks
may come on top of the quota, and the rating page names the second the session stops."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.models import Enrolment, GoldAnswer, GoldItem, QualityRule
from annotator.studies.selectors import PAYMENT_HEADER
from tests.annotator.study_support import PID_A, RATING, arrive, prolific_link, rate_next, start
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db
DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def with_checks(name: str, n_checks: int = 2):
    batch = make_batch(name, n_items=6)
    QualityRule.objects.create(batch=batch, training_items=0, check_every=2)
    for n in range(n_checks):
        GoldItem.objects.create(
            batch=batch,
            item_id=f"c{n}",
            kind="check",
            position=n,
            prompt=f"Check {n}",
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


def test_the_rating_page_the_queue_and_the_end_page_count_the_same():
    batch = with_checks("counts")
    _link, token = prolific_link(batch, quota=2)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    assert rate_next(client, batch).status_code == 302  # one item
    check = client.get(reverse("annotate_next", args=[batch.pk]))  # one item in two is a check
    answer = GoldAnswer.objects.get(submitted_at__isnull=True)
    assert answer.gold_item.kind == "check" and "Check " in check.content.decode()
    client.post(
        reverse("gold_submit", args=[answer.pk]), {k: v for k, v in RATING.items() if k.startswith("score")}
    )
    page = client.get(reverse("annotate_next", args=[batch.pk]))
    assert you_rated(page.content.decode()) == 2  # the item and the check
    cell = queue_count(client, batch)
    assert cell.startswith("2 ") and "edit" in cell, cell  # was 1: the annotations alone
    client.post(reverse("annotate_submit", args=[page.context["item"].pk]), RATING)  # quota reached
    done = client.get(reverse("annotate_next", args=[batch.pk]), follow=True).content.decode()
    assert "You rated 3 items." in done
    assert queue_count(client, batch).strip() == "3"  # finished: no edit link

    admin = make_user("admin", role="admin")
    client.force_login(admin)
    rows = list(
        csv.reader(io.StringIO(client.get(reverse("study_workers_csv", args=[batch.pk])).content.decode()))
    )
    assert rows[0] == list(PAYMENT_HEADER) and rows[0][-1] == "checks_done"
    row = dict(zip(rows[0], rows[1], strict=True))
    assert (row["items_done"], row["checks_done"], row["state"]) == ("2", "1", "done")


def test_no_edit_link_for_a_worker_who_answered_only_a_check():
    """The edit list holds annotations only: a link to an empty list would say the one rated item was a check."""
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
    assert cell.strip() == "1", cell


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
