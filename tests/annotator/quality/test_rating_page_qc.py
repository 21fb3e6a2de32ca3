"""Rating-page slips: a blind training heading, "Your annotations" numbered without gaps, the latest
user turn shown once, example scores in the rubric's order, and item ids with invisible characters
refused at upload by row."""

import json
import re

import pytest
from django.urls import reverse

from annotator.models import Assignment, GoldAnswer, Item, QualityRule
from annotator.uploads.files.annotation_file import parse_annotation_file
from annotator.uploads.files.batch_file import parse_batch_file
from hcs.rubric import Rubric
from hcs.rubric_markdown import render_instructions
from tests.factories import make_batch, make_gold_items, make_user

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
EXPERT = dict(zip(DIMS, [2, 3, 1, 4, 4]))
RATING = {f"score_{d}": "3" for d in DIMS}


def _label(html: str) -> str:
    return re.search(r'<strong class="item-label">([^<]+)</strong>', html).group(1)


@pytest.mark.django_db
def test_training_feedback_names_no_item_id_and_takes_the_focus(client):
    batch = make_batch("blind", n_items=2, constraints=())
    QualityRule.objects.create(batch=batch, training_items=2, check_every=0)
    make_gold_items(
        batch,
        "training",
        2,
        item_id="SECRET-ID-{n}",
        prompt="Train {n}",
        response="r",
        scores=EXPERT,
        flags=[],
        explanation="why",
    )
    client.force_login(make_user("blind"))
    client.get(reverse("annotate_next", args=[batch.pk]))
    answer = GoldAnswer.objects.get(submitted_at__isnull=True)
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        if headers:
            client.get(reverse("annotate_next", args=[batch.pk]))
            answer = GoldAnswer.objects.get(submitted_at__isnull=True)
        html = client.post(
            reverse("gold_submit", args=[answer.pk]),
            {f"score_{d}": str(v) for d, v in EXPERT.items()},
            **headers,
        ).content.decode()
        assert "SECRET-ID" not in html
        heading = re.search(r"<h1[^>]*>(.*?)</h1>", html).group(0)
        number = 1 if not headers else 2
        assert f"Training item {number} of 2" in heading
        assert 'tabindex="-1"' in heading and "autofocus" in heading  # htmx focuses it after the swap
        between = html[html.index(heading) : html.rindex("<a", 0, html.index('id="continue"'))]
        assert not re.search(r"<(a|button|input|select|textarea)\b", between)  # Continue is the next Tab stop


@pytest.mark.django_db
def test_your_annotations_are_numbered_without_the_gaps_of_checks_and_skips(client):
    """Numbered by their place in the whole sequence, the list's gaps showed which items were
    attention checks; it is numbered 1 to n in the order the ratings were made, and says what it holds."""
    batch = make_batch("numbers", n_items=5, constraints=())
    QualityRule.objects.create(batch=batch, training_items=1, check_every=2, check_min_answered=10)
    gold = dict(prompt="Train", response="r", scores=EXPERT, flags=[], explanation="", tolerance=4)
    make_gold_items(batch, "training", 1, item_id="t{n}", **gold)
    make_gold_items(batch, "check", 3, item_id="c{n}", **gold)
    user = make_user("numbers")
    client.force_login(user)
    next_url = reverse("annotate_next", args=[batch.pk])
    rated, checks = [], 0
    for action in ("rate", "skip", "rate", "rate", "rate", "rate", "rate", "rate"):
        client.get(next_url)
        pending = GoldAnswer.objects.filter(annotator=user, submitted_at__isnull=True).first()
        if pending is not None:  # the training item, or a check
            client.post(
                reverse("gold_submit", args=[pending.pk]), {f"score_{d}": str(v) for d, v in EXPERT.items()}
            )
            checks += pending.gold_item.kind == "check"
            continue
        item = Assignment.objects.get(annotator=user, state="leased").item
        if action == "skip":
            client.post(reverse("annotate_skip", args=[item.pk]), {"skip_reason": "unclear"})
        else:
            client.post(reverse("annotate_submit", args=[item.pk]), RATING)
            rated.append(item.prompt)
    assert checks and len(rated) >= 3  # a check came between the ratings
    html = client.get(reverse("annotate_mine", args=[batch.pk])).content.decode()
    listed = re.findall(
        r'<td data-label="(?:Item|Number)"><strong>(\d+)</strong></td>\s*<td class="mine-prompt">([^<]+)</td>',
        html,
    )
    assert [int(n) for n, _ in listed] == list(range(len(rated), 0, -1))  # newest first, no gap
    assert [prompt for _, prompt in reversed(listed)] == rated
    assert "These are the ratings you can still change" in html


@pytest.mark.django_db
def test_the_latest_user_turn_is_shown_once(client):
    batch = make_batch("turns-once", n_items=1, constraints=())
    Item.objects.filter(batch=batch).update(
        conversation=[
            {"role": "user", "content": "EARLIER-TURN"},
            {"role": "assistant", "content": "REPLY"},
            {"role": "user", "content": "LATEST-PROMPT"},
            {"role": "assistant", "content": "THE-RESPONSE"},
        ],
        prompt="LATEST-PROMPT",
        response="THE-RESPONSE",
    )
    client.force_login(make_user("turns-once"))
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert html.count("LATEST-PROMPT") == 1 and html.count("THE-RESPONSE") == 1
    assert html.index("EARLIER-TURN") < html.index("REPLY") < html.index("LATEST-PROMPT")
    # A last user turn that differs from the prompt is an earlier turn and stays.
    Item.objects.filter(batch=batch).update(prompt="SOMETHING-ELSE")
    client.force_login(make_user("turns-twice"))
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert "LATEST-PROMPT" in html and "SOMETHING-ELSE" in html


def test_example_scores_follow_the_rubrics_order_even_from_sorted_json():
    default = Rubric.default()
    stored = Rubric.from_dict(
        json.loads(json.dumps(default.to_dict(), sort_keys=True))
    )  # as a batch keeps it
    text = render_instructions(stored)
    abbreviations = [d.abbreviation for d in default.dimensions]
    assert abbreviations == ["C", "R", "I", "S", "F"]
    for line in (x for x in text.splitlines() if "Scores:" in x):
        assert re.findall(r"\b([A-Z])=\d", line) == abbreviations, line


BAD_IDS = [
    ("route\u202e21", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("route\u200b1", "U+200B ZERO WIDTH SPACE"),
    ("\u2067route\u2069", "U+2067 RIGHT-TO-LEFT ISOLATE"),
    ("ro\u200dute", "U+200D ZERO WIDTH JOINER"),
    ("\ufeffroute", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    ("route\u200f", "U+200F RIGHT-TO-LEFT MARK"),
]


@pytest.mark.parametrize(("item_id", "named"), BAD_IDS)
def test_batch_import_refuses_item_ids_with_invisible_characters_by_row(item_id, named):
    data = f"item_id,prompt,response\nok-1,p,r\n{item_id},p,r\n".encode()
    parsed = parse_batch_file(data, filename="items.csv", rubric=Rubric.default())
    assert [str(e) for e in parsed.errors] == [
        f"row 3, column `item_id`: contains {named}, an invisible character that can hide or reorder what the "
        "id shows; remove it"
    ]
    jsonl = (
        json.dumps({"item_id": "ok", "prompt": "p", "response": "r"})
        + "\n"
        + json.dumps({"item_id": item_id, "prompt": "p", "response": "r"})
        + "\n"
    ).encode()
    parsed = parse_batch_file(jsonl, filename="items.jsonl", rubric=Rubric.default())
    assert not parsed.ok and named in str(parsed.errors[0]) and "item_id" in str(parsed.errors[0])


@pytest.mark.parametrize(("item_id", "named"), BAD_IDS[:2])
def test_annotation_import_refuses_them_too(item_id, named):
    data = f"item_id,annotator,coherence\nok,a,3\n{item_id},a,3\n".encode()
    parsed = parse_annotation_file(data, filename="a.csv", rubric=Rubric.default())
    assert any(str(e).startswith(f"row 3, column `item_id`: contains {named}") for e in parsed.errors), (
        parsed.errors
    )


def test_visible_non_ascii_ids_are_fine():
    data = "item_id,prompt,response\nÜber-route,p,r\nמסלול-1,p,r\n路线-2,p,r\n".encode()
    assert parse_batch_file(data, filename="items.csv", rubric=Rubric.default()).ok
