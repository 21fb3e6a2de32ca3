"""Training with feedback and checks in the queue, over HTTP as an annotator sees them."""

import pytest
from django.urls import reverse

from annotator.models import (
    AnnotatorStanding,
    Assignment,
    GoldAnswer,
    GoldItem,
    QualityRule,
)
from annotator.quality.services.exclusion import annotator_screen_out
from tests.factories import make_batch, make_gold_items, make_user

pytestmark = pytest.mark.django_db

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
EXPERT = dict(zip(DIMS, [2, 3, 1, 4, 4]))


def form(scores, **extra):
    return {**{f"score_{d}": str(v) for d, v in scores.items()}, **extra}


@pytest.fixture
def trained_batch(client):
    batch = make_batch("training", n_items=3, constraints=())
    QualityRule.objects.create(batch=batch, training_items=2, check_every=0)
    make_gold_items(
        batch,
        "training",
        2,
        item_id="t{n}",
        prompt="Train {n}",
        response="Take the toll road.",
        scores=EXPERT,
        flags=["ignores_hard_constraint"],
        explanation="<i>The user said no tolls.</i>",
    )
    user = make_user("trainee")
    client.force_login(user)
    return batch, user


def test_training_comes_first_with_feedback_and_passing_opens_the_items(client, trained_batch):
    batch, user = trained_batch
    page = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert "Train 0" in page and "training: the expert" in page
    assert not Assignment.objects.filter(annotator=user).exists()  # no real item before training
    answer = GoldAnswer.objects.get(annotator=user)
    # One point off on coherence (within tolerance), the cap flag right: MAE 0.2.
    own = {**EXPERT, "coherence": 3}
    response = client.post(
        reverse("gold_submit", args=[answer.pk]), form(own, flags="ignores_hard_constraint")
    )
    feedback = response.content.decode()
    assert response.status_code == 200 and "Your scores beside the expert" in feedback
    assert "&lt;i&gt;The user said no tolls.&lt;/i&gt;" in feedback  # the explanation, escaped
    assert "+1" in feedback and "Ignores" in feedback
    client.get(reverse("annotate_next", args=[batch.pk]))
    second = GoldAnswer.objects.get(annotator=user, submitted_at__isnull=True)
    assert second.gold_item.item_id == "t1"
    # Three points off on fluency: marked, and mean MAE (0.2 + 0.6) / 2 = 0.4 ≤ 0.75 passes.
    response = client.post(
        reverse("gold_submit", args=[second.pk]),
        form({**EXPERT, "fluency": 1}, flags="ignores_hard_constraint"),
    )
    body = response.content.decode()
    assert 'class="off"' in body and "−3" not in body and "-3" in body
    assert "You passed the training" in body
    assert AnnotatorStanding.objects.get(batch=batch, annotator=user).training == "passed"
    page = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert Assignment.objects.filter(annotator=user, state="leased").exists()
    assert "training: the expert" not in page


def test_a_missed_cap_fails_training_and_ends_politely(client, trained_batch):
    batch, user = trained_batch
    for _ in range(2):
        client.get(reverse("annotate_next", args=[batch.pk]))
        answer = GoldAnswer.objects.get(annotator=user, submitted_at__isnull=True)
        client.post(reverse("gold_submit", args=[answer.pk]), form(EXPERT))  # exact scores, flag missed
    standing = AnnotatorStanding.objects.get(batch=batch, annotator=user)
    assert standing.training == "failed" and standing.screened_out_at is not None
    page = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert "Thank you for your time" in page and 'id="rate-form"' not in page
    assert not Assignment.objects.filter(annotator=user).exists()


def test_screen_out_hook_releases_the_lease_and_ends_the_queue(client):
    batch = make_batch("hook", n_items=2, constraints=())
    user = make_user("crowd")
    client.force_login(user)
    client.get(reverse("annotate_next", args=[batch.pk]))
    annotator_screen_out(batch=batch, annotator=user, reason="failed an entry question")
    assert Assignment.objects.get(annotator=user).state == "released"
    assert "Thank you for your time" in client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    queue = client.get(reverse("annotate_queue")).content.decode()
    assert "Finished for you" in queue and reverse("annotate_next", args=[batch.pk]) not in queue


def test_a_check_looks_like_any_item_and_failing_checks_warns_then_blocks(client):
    batch = make_batch("routes", n_items=10, constraints=())
    QualityRule.objects.create(batch=batch, check_every=2, check_min_answered=3)
    make_gold_items(
        batch,
        "check",
        5,
        item_id="route-9{n}",  # route-90 to route-94
        prompt="This is a check: give every dimension 2.",
        response="Go north.",
        scores=dict.fromkeys(DIMS, 2),
        tolerance=0,
    )
    user = make_user("hasty")
    client.force_login(user)
    seen_check = None
    warned = False
    for _ in range(12):
        response = client.get(reverse("annotate_next", args=[batch.pk]))
        html = response.content.decode()
        pending = GoldAnswer.objects.filter(annotator=user, submitted_at__isnull=True).first()
        if pending is not None:
            seen_check = html
            answer = form(dict.fromkeys(DIMS, 5))
            after = client.post(
                reverse("gold_submit", args=[pending.pk]), answer, follow=True
            ).content.decode()
            warned = warned or "differ a lot" in after
        elif 'id="rate-form"' in html:
            normal = html
            item = Assignment.objects.get(annotator=user, state="leased").item
            client.post(reverse("annotate_submit", args=[item.pk]), form(dict.fromkeys(DIMS, 5)))
        else:
            break
    assert seen_check is not None
    # The same page as a regular item: "check" appears only where the item's own text says it.
    assert seen_check.lower().count("check") == normal.lower().count("check") + 1
    assert "gold" not in seen_check.lower()
    assert 'id="rate-form"' in seen_check and "training" not in seen_check
    standing = AnnotatorStanding.objects.get(batch=batch, annotator=user)
    assert standing.blocked_at is not None and standing.excluded
    assert "No more items for you" in html and "check" not in html.lower()
    assert GoldAnswer.objects.filter(annotator=user, passed=False).count() == 3
    assert not Assignment.objects.filter(annotator=user, state="leased").exists()
    assert not warned  # 0 of 3 right goes straight past the warning to the block


def test_one_wrong_check_in_four_warns(client):
    batch = make_batch("warn", n_items=10, constraints=())
    rule = QualityRule.objects.create(batch=batch, check_every=2, check_min_answered=3)
    golds = [
        GoldItem.objects.create(
            batch=batch,
            item_id=f"g{n}",
            kind="check",
            position=n,
            prompt="p",
            response="r",
            scores=dict.fromkeys(DIMS, 2),
            tolerance=0,
        )
        for n in range(4)
    ]
    user = make_user("mostly")
    from annotator.quality.services.gold import gold_answer_submit
    from annotator.rating.services.annotations import annotation_submit
    from annotator.rating.services.flow import rating_next

    verdicts = []
    for _ in range(8):
        step = rating_next(batch=batch, annotator=user)
        if step.answer is not None:
            wrong = len(verdicts) == 0
            result = gold_answer_submit(
                answer=step.answer, annotator=user, scores=dict.fromkeys(DIMS, 5 if wrong else 2)
            )
            verdicts.append(result.standing)
        else:
            annotation_submit(item=step.assignment.item, annotator=user, scores=dict.fromkeys(DIMS, 3))
    # 0/1, 1/2: too few to judge; 2/3 = 67 % < 80 %: warn; 3/4 = 75 %: still warn.
    assert verdicts == ["ok", "ok", "warn", "warn"], verdicts
    assert AnnotatorStanding.objects.get(batch=batch, annotator=user).warned_at is not None
    assert rule.check_block_below == 0.5
    assert {g.pk for g in golds} == set(GoldAnswer.objects.values_list("gold_item_id", flat=True))


def test_the_number_while_rating_is_the_number_in_the_list_and_checks_are_held_like_items(client):
    """The number shown while rating ("Item n") is the number "Your annotations" gives that rating
    (``item_number``): training items are numbered apart, and a check or a skipped item, which the
    list does not hold, shows the number the next rating takes. Checks are held like items."""
    import re

    batch = make_batch("numbers", n_items=8, constraints=())
    QualityRule.objects.create(batch=batch, training_items=1, check_every=2, check_min_answered=10)
    gold = dict(response="Go north.", scores=dict.fromkeys(DIMS, 3), tolerance=4)
    make_gold_items(batch, "training", 1, item_id="t{n}", prompt="Train", **gold)
    make_gold_items(batch, "check", 3, item_id="c{n}", prompt="Rate this.", start=1, **gold)
    user = make_user("counted")
    client.force_login(user)
    shown, held, rated_as = [], [], {}  # rated_as: prompt -> the number shown while rating it
    actions = iter(("rate", "skip", "rate", "rate"))  # for the batch's items; gold items are answered
    for _ in range(8):
        html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
        label = re.search(r'class="item-label">([^<]+)<', html).group(1)
        title = re.search(r"<title>([^<·]+)", html).group(1).strip()
        held.append("Held for you until" in html)
        pending = GoldAnswer.objects.filter(annotator=user, submitted_at__isnull=True).first()
        if pending is not None:
            shown.append((pending.gold_item.kind, label))
            if pending.gold_item.kind == "training":
                assert title == "Training item 1"
            client.post(reverse("gold_submit", args=[pending.pk]), form(dict.fromkeys(DIMS, 3)))
            continue
        item = Assignment.objects.get(annotator=user, state="leased").item
        assert title == f"Rate {label[0].lower()}{label[1:]}"
        if next(actions) == "skip":
            shown.append(("skip", label))
            client.post(reverse("annotate_skip", args=[item.pk]), {"skip_reason": "unclear"})
        else:
            shown.append(("item", label))
            rated_as[item.prompt] = int(label.removeprefix("Item "))
            client.post(reverse("annotate_submit", args=[item.pk]), form(dict.fromkeys(DIMS, 3)))
    assert shown == [
        ("training", "Training item 1"),
        ("item", "Item 1"),
        ("check", "Item 2"),
        ("skip", "Item 2"),
        ("item", "Item 2"),
        ("check", "Item 3"),
        ("item", "Item 3"),
        ("check", "Item 4"),
    ], shown
    listed = re.findall(
        r'<td data-label="Number"><strong>(\d+)</strong></td>\s*<td class="mine-prompt">([^<]+)</td>',
        client.get(reverse("annotate_mine", args=[batch.pk])).content.decode(),
    )
    assert {prompt: int(n) for n, prompt in listed} == rated_as and len(rated_as) == 3
    assert all(held)


def test_an_account_screened_out_by_training_is_not_listed_as_working(client):
    from annotator.studies.selectors import worker_progress
    from tests.annotator.study_support import start

    batch = make_batch("visits", n_items=2, constraints=())
    batch.consent_text = "You agree."
    batch.save()
    user = make_user("in-house")
    client.force_login(user)
    start(client, batch)
    assert [w.state for w in worker_progress(batch=batch)] == ["working"]
    annotator_screen_out(batch=batch, annotator=user, reason="failed training")
    assert [w.state for w in worker_progress(batch=batch)] == ["screened out"]
