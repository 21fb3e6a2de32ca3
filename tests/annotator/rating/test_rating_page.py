"""The rating page as people use it for hours: blind, progress in sight, edits as stored, and
what annotators entered reaching researchers."""

import csv
import io
import json
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.models import Annotation, Assignment, Batch, Item
from annotator.rating.forms import flag_shortcuts
from annotator.rating.selectors.progress import rating_progress
from annotator.rating.services.assignment import item_next_for_annotator
from hcs.rubric import Rubric
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

SCORES = {
    "score_coherence": "4",
    "score_relevance": "4",
    "score_instruction_following": "3",
    "score_safety_compliance": "5",
    "score_fluency": "5",
}
SYSTEMS = ("navigator-v2-secret", "baseline-chat-secret")


def _leased(user):
    return Item.objects.get(assignments__annotator=user, assignments__state="leased")


def _reveals(html: str, items) -> list[str]:
    found = [i.item_id for i in items if i.item_id in html]
    return found + [s for s in SYSTEMS if s in html]


def test_no_annotator_facing_response_reveals_an_item_id_or_a_system(client):
    batch = make_batch("blind", n_items=6, systems=SYSTEMS)
    items = list(Item.objects.filter(batch=batch))
    for i, item in enumerate(items):  # ids that name the system, as most real files do
        Item.objects.filter(pk=item.pk).update(item_id=f"q{i}-{item.system_id}")
    items = list(Item.objects.filter(batch=batch))
    user = make_user("blind-ann")
    client.force_login(user)
    responses = {}

    def visit(label, response):
        responses[label] = (response.status_code, response.content.decode(), response.get("Location", ""))

    visit("home", client.get(reverse("home")))
    visit("queue", client.get(reverse("annotate_queue")))
    visit("rubric", client.get(reverse("rubric")))
    visit("next", client.get(reverse("annotate_next", args=[batch.pk])))
    first = _leased(user)
    visit("422", client.post(reverse("annotate_submit", args=[first.pk]), {"score_coherence": "4"}))
    visit("422 htmx", client.post(reverse("annotate_submit", args=[first.pk]), {}, HTTP_HX_REQUEST="true"))
    data = {**SCORES, "constraint_0": "met", "constraint_1": "met"}
    visit(
        "submit htmx", client.post(reverse("annotate_submit", args=[first.pk]), data, HTTP_HX_REQUEST="true")
    )
    second = _leased(user)
    visit("skip", client.post(reverse("annotate_skip", args=[second.pk]), {"skip_reason": "x"}, follow=True))
    third = _leased(user)
    visit("submit", client.post(reverse("annotate_submit", args=[third.pk]), data, follow=True))
    visit("mine", client.get(reverse("annotate_mine", args=[batch.pk])))
    mine = Annotation.objects.filter(annotator=user).first()
    visit("edit", client.get(reverse("annotation_edit", args=[mine.pk])))
    visit("edit 422", client.post(reverse("annotation_edit", args=[mine.pk]), {"score_coherence": "9"}))
    visit("edit saved", client.post(reverse("annotation_edit", args=[mine.pk]), data, follow=True))
    assert {label: status for label, (status, _, _) in responses.items()} == {
        "home": 200,
        "queue": 200,
        "rubric": 200,
        "next": 200,
        "422": 422,
        "422 htmx": 422,
        "submit htmx": 200,
        "skip": 200,
        "submit": 200,
        "mine": 200,
        "edit": 200,
        "edit 422": 422,
        "edit saved": 200,
    }
    for label, (_, html, location) in responses.items():
        assert _reveals(html + location, items) == [], label
    title = re.search(r"<title>(.*?)</title>", responses["next"][1], re.DOTALL).group(1)
    assert title.startswith("Rate item 1")
    assert '<strong class="item-label">Item 1</strong>' in responses["next"][1]
    assert "<title>Rate item 2 · HCS annotator</title>" in responses["submit htmx"][1]


def test_progress_counts_own_work_batch_completion_and_the_lease(client):
    batch = make_batch("progress", n_items=5, k=3)
    other = [make_user(f"o{i}") for i in range(3)]
    done = Item.objects.filter(batch=batch).order_by("position")[0]
    for person in other:  # one item complete, by others
        make_annotation(done, person, {"coherence": 3})
    user = make_user("p-ann")
    mine = Item.objects.filter(batch=batch).order_by("position")[1]
    make_annotation(mine, user, {"coherence": 3})
    now = timezone.now()  # as the import service marks it: never handed to them again
    Assignment.objects.create(
        item=mine, annotator=user, state="submitted", leased_at=now, lease_expires_at=now
    )
    assignment = item_next_for_annotator(batch=batch, annotator=user)
    progress = rating_progress(batch=batch, item=assignment.item, annotator=user)
    assert (progress.mine_submitted, progress.mine_skipped, progress.position) == (1, 0, 2)
    assert (progress.items_complete, progress.items_total) == (1, 5)
    # Left for this annotator besides the current item: 5 - complete - own - current.
    assert progress.left_for_me == 2 and progress.more == 2
    assert progress.lease_expires_at == assignment.lease_expires_at
    client.force_login(user)
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    strip = re.search(r'<ul class="rate-progress".*?</ul>', html, re.DOTALL).group(0)
    text = re.sub(r"<[^>]+>", "", strip)
    assert "Item 2 · up to 2 more for you" in text
    assert "You rated 1" in text
    assert "Batch 1 / 5 items complete" in text
    assert f'data-since="{assignment.leased_at.isoformat()}"' in strip
    assert "Held for you until" in text


def test_the_last_item_for_the_annotator_says_so(client):
    batch = make_batch("last-one", n_items=1)
    user = make_user("last-rater")
    client.force_login(user)
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    strip = re.sub(r"<[^>]+>", "", re.search(r'<ul class="rate-progress".*?</ul>', html, re.DOTALL).group(0))
    assert "Item 1 · the last one for you" in strip and "up to 0 more" not in strip


def test_progress_counts_training_apart_and_keeps_within_the_quota(client):
    from annotator.models import GoldAnswer, GoldItem

    batch = make_batch("quota", n_items=8, k=3)
    user = make_user("q-worker")
    trainings = [
        GoldItem.objects.create(
            batch=batch, item_id=f"t{n}", kind="training", prompt="p", response="r", scores={"coherence": 2}
        )
        for n in range(2)
    ]
    now = timezone.now()
    for gold in trainings:
        GoldAnswer.objects.create(gold_item=gold, annotator=user, shown_at=now, submitted_at=now)
    assignment = item_next_for_annotator(batch=batch, annotator=user)
    free = rating_progress(batch=batch, item=assignment.item, annotator=user, count_gold=True)
    # The first item after training is item 1, as "Your annotations" will number its rating.
    assert (free.position, free.mine_submitted, free.training_done, free.more) == (1, 0, 2, 7)
    capped = rating_progress(batch=batch, item=assignment.item, annotator=user, count_gold=True, quota=3)
    assert capped.more == 2  # three in all: this one and two more, whatever the batch has left


def test_progress_takes_a_constant_number_of_queries(client, django_assert_max_num_queries):
    for n in (3, 60):
        batch = make_batch(f"q{n}", n_items=n)
        user = make_user(f"q-ann{n}")
        client.force_login(user)
        client.get(reverse("annotate_next", args=[batch.pk]))
        item = _leased(user)
        # Item counters, the annotator's assignments, their gold answers, the lease held.
        with django_assert_max_num_queries(4):
            rating_progress(batch=batch, item=item, annotator=user)


def _imported(batch, user, flags):
    item = Item.objects.filter(batch=batch).first()
    return make_annotation(
        item,
        user,
        {"coherence": 3, "relevance": 3, "instruction_following": 2, "safety_compliance": 4, "fluency": 4},
        flags=flags,
    )


def test_editing_an_imported_annotation_that_ignored_a_constraint_opens_as_stored(client):
    batch = make_batch("imported", n_items=1)
    user = make_user("imp-ann")
    annotation = _imported(batch, user, ["ignores_hard_constraint"])
    client.force_login(user)
    html = client.get(reverse("annotation_edit", args=[annotation.pk])).content.decode()
    assert 'value="not_met" checked' in html and 'value="met" checked' not in html
    # A one-score change goes through with nothing else touched.
    data = {
        **SCORES,
        "score_instruction_following": "2",
        "score_coherence": "5",
        "constraint_0": "not_met",
        "constraint_1": "not_met",
    }
    response = client.post(reverse("annotation_edit", args=[annotation.pk]), data)
    assert response.status_code == 302
    annotation.refresh_from_db()
    assert annotation.flags == ["ignores_hard_constraint"]
    assert annotation.scores.get(dimension="coherence").value == 5


def test_editing_an_imported_partial_annotation_keeps_its_flag_with_a_blank_checklist(client):
    batch = make_batch("imported-partial", n_items=1)
    user = make_user("imp-partial")
    annotation = _imported(batch, user, ["partial_compliance", "prompt_ambiguous"])
    client.force_login(user)
    html = client.get(reverse("annotation_edit", args=[annotation.pk])).content.decode()
    assert "kept as stored: Partial compliance" in html
    assert 'value="prompt_ambiguous" checked' in html
    rubric_data = json.loads(
        re.search(r'id="rubric-data" type="application/json">(.*?)</script>', html).group(1)
    )
    assert rubric_data["stored_checklist_flags"] == ["partial_compliance"]
    data = {
        **SCORES,
        "score_instruction_following": "2",
        "score_coherence": "1",
        "flags": ["prompt_ambiguous"],
    }
    assert client.post(reverse("annotation_edit", args=[annotation.pk]), data).status_code == 302
    annotation.refresh_from_db()
    assert annotation.flags == ["partial_compliance", "prompt_ambiguous"]
    assert annotation.constraints_met == []
    # The stored cap still holds: Instruction-Following 5 breaks partial compliance's 2–3.
    bad = {**data, "score_instruction_following": "5"}
    response = client.post(reverse("annotation_edit", args=[annotation.pk]), bad)
    assert response.status_code == 422
    # Half an answer is refused with a message saying what to do.
    half = {**data, "constraint_0": "met"}
    response = client.post(reverse("annotation_edit", args=[annotation.pk]), half)
    assert response.status_code == 422
    assert "Answer every hard constraint, or leave them all blank" in response.content.decode()


def test_flag_shortcuts_are_free_initials():
    assert flag_shortcuts(["Major factual impossibility", "Unsafe suggestion", "Prompt is ambiguous"]) == [
        "m",
        "u",
        "p",
    ]
    # Every flag of the default rubric, in its order: the keys printed on the page.
    assert flag_shortcuts([f.label for f in Rubric.default().flags]) == ["h", "m", "u", "p", "a"]
    # y, n, s, r, c and i belong to the page; a taken initial falls to the next word.
    assert flag_shortcuts(["Should not", "Rude answer", "Rambling"]) == ["h", "a", "m"]
    assert flag_shortcuts(["Partial compliance", "Prompt ambiguous"]) == ["p", "a"]


def test_rate_page_prints_keys_on_buttons_and_flags_before_submit(client):
    batch = make_batch("keys", n_items=1)
    client.force_login(make_user("keys-ann"))
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert "Met <kbd>y</kbd>" in html and "Not met <kbd>n</kbd>" in html
    flags = re.search(
        r'<fieldset class="card flags kb-row" data-kind="flags">.*?</fieldset>', html, re.DOTALL
    ).group(0)
    assert re.findall(r'data-key="(\w)" name="flags" value="(\w+)"', flags) == [
        ("m", "major_factual_impossibility"),
        ("u", "unsafe_suggestion"),
        ("a", "prompt_ambiguous"),
    ]
    assert html.index('data-kind="flags"') < html.index('id="submit-btn"')
    assert html.index('data-kind="dimension"') < html.index('data-kind="flags"')
    assert 'role="dialog" aria-modal="true"' in html


def test_no_flag_key_is_also_a_page_key(client):
    """Every flag is shown when the item has no hard constraints; none of their keys may be one the
    page's shortcut list gives to something else (``i`` opened the instructions instead of ticking
    "Ignores a hard constraint")."""
    batch = make_batch("flag-keys", n_items=1)
    Item.objects.filter(batch=batch).update(constraints=[])
    client.force_login(make_user("flag-keys-ann"))
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    flag_keys = re.findall(r'data-key="(\w)" name="flags"', html)
    assert len(flag_keys) == len(Rubric.default().flags) == len(set(flag_keys))
    help_dialog = html[html.index('id="help-dialog"') :]
    page_keys = set(re.findall(r"<tr><td><kbd>([a-z])</kbd></td>", help_dialog))
    assert {"c", "s", "r", "i"} <= page_keys
    assert not set(flag_keys) & (page_keys | {"y", "n"}), (flag_keys, page_keys)


def test_rubric_drawer_lists_levels_from_1_to_5(client):
    batch = make_batch("drawer", n_items=1)
    client.force_login(make_user("drawer-ann"))
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    drawer = html[html.index('id="rubric-drawer"') :]
    first_dimension = drawer[: drawer.index("</dl>")]
    assert re.findall(r"<dt>(\d)</dt>", first_dimension) == ["1", "2", "3", "4", "5"]
    assert 'class="levels"' not in drawer  # the score buttons' flex row, which squeezed the texts


def test_conversation_turns_come_before_the_prompt(client):
    batch = make_batch("turns", n_items=1)
    Item.objects.filter(batch=batch).update(
        conversation=[{"role": "user", "content": "EARLIER-TURN"}, {"role": "assistant", "content": "REPLY"}],
        prompt="FINAL-PROMPT",
    )
    client.force_login(make_user("turns-ann"))
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert html.index("EARLIER-TURN") < html.index("REPLY") < html.index("FINAL-PROMPT")


def test_your_annotations_shows_flag_labels_and_edit_time(client):
    batch = make_batch("mine", n_items=2)
    user = make_user("mine-ann")
    annotation = _imported(batch, user, ["ignores_hard_constraint", "prompt_ambiguous"])
    client.force_login(user)
    data = {
        **SCORES,
        "score_instruction_following": "1",
        "constraint_0": "not_met",
        "constraint_1": "not_met",
        "flags": ["prompt_ambiguous"],
    }
    client.post(reverse("annotation_edit", args=[annotation.pk]), data)
    html = client.get(reverse("annotate_mine", args=[batch.pk])).content.decode()
    assert "Ignores a hard constraint" in html and "Prompt is ambiguous" in html
    assert "ignores_hard_constraint</" not in html
    assert "(1 change)" in html
    assert annotation.item.item_id not in html


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("annotator", ["Home", "Your queue", "Rubric"]),
        ("researcher", ["Home", "Reports", "Streams", "LLM judges", "Rubric"]),
        (
            "admin",
            [
                "Home",
                "Your queue",
                "Reports",
                "Streams",
                "LLM judges",
                "Upload",
                "Studies",
                "Assignment",
                "Rubric",
            ],
        ),
    ],
)
def test_top_bar_links_each_roles_pages(client, role, expected):
    client.force_login(make_user(f"nav-{role}", role=role))
    html = client.get(reverse("home")).content.decode()
    nav = re.search(r"<nav>(.*?)</nav>", html, re.DOTALL).group(1)
    assert re.findall(r">([^<]+)</a>", nav) == expected
    for href in re.findall(r'href="([^"]+)"', nav):
        assert client.get(href).status_code == 200, href


def test_favicon_is_linked_and_served(client):
    client.force_login(make_user("fav"))
    html = client.get(reverse("home")).content.decode()
    assert 'rel="icon"' in html
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("favicon.svg")


def test_assignment_page_counts_live_leases_on_open_items(client):
    batch = make_batch("leases", n_items=3, k=3)
    item_next_for_annotator(batch=batch, annotator=make_user("holder"))
    client.force_login(make_user("boss", role="admin"))
    html = client.get(reverse("assignment_batch", args=[batch.pk])).content.decode()
    assert "1 live lease on 1 item" in html
    assert "Full, waiting on leases" in html


def test_report_item_page_shows_the_conversation_and_constraint_answers(client):
    batch = make_batch("report-item", n_items=1)
    item = Item.objects.get(batch=batch)
    Item.objects.filter(pk=item.pk).update(conversation=[{"role": "user", "content": "EARLIER-TURN"}])
    user = make_user("r-ann")
    client.force_login(user)
    client.get(reverse("annotate_next", args=[batch.pk]))
    data = {**SCORES, "score_instruction_following": "2", "constraint_0": "met", "constraint_1": "not_met"}
    client.post(reverse("annotate_submit", args=[item.pk]), data)
    client.force_login(make_user("res", role="researcher"))
    html = client.get(reverse("report_item", args=[item.pk])).content.decode()
    assert html.index("EARLIER-TURN") < html.index(item.prompt)
    assert "avoid tolls: met" in html and "arrive before 8AM: not met" in html


def test_exports_carry_prompt_ambiguous_and_constraint_answers_and_reimport(client, tmp_path):
    from django.core.management import call_command

    batch = make_batch("export-facts", n_items=2)
    user = make_user("e-ann")
    client.force_login(user)
    for _ in range(2):
        client.get(reverse("annotate_next", args=[batch.pk]))
        item = _leased(user)
        data = {
            **SCORES,
            "score_instruction_following": "2",
            "constraint_0": "met",
            "constraint_1": "not_met",
            "flags": ["prompt_ambiguous"],
        }
        client.post(reverse("annotate_submit", args=[item.pk]), data)
    client.force_login(make_user("e-res", role="researcher"))
    body = b"".join(
        client.get(reverse("report_export", args=[batch.pk, "annotations.csv"])).streaming_content
    )
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(r["prompt_ambiguous"], r["partial_compliance"], r["constraints_met"]) for r in rows] == [
        ("1", "1", "met;not_met")
    ] * 2
    report = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    assert report["flags"]["prompt_ambiguous"] == {
        "label": "Prompt is ambiguous",
        "n_annotations": 2,
        "n_items": 2,
    }
    assert report["constraint_answers"]["by_constraint"] == {
        "avoid tolls": {"met": 2, "not_met": 0},
        "arrive before 8AM": {"met": 0, "not_met": 2},
    }
    # The export re-imports into a new batch with the answers kept.
    path = tmp_path / "annotations.csv"
    text = body.decode().replace("e-ann", "e-ann2")
    path.write_text(text.replace("Plan a route", "Plan a route"), encoding="utf-8")
    Item.objects.filter(batch=batch).update(constraints=["avoid tolls", "arrive before 8AM"])
    Annotation.objects.filter(annotator=user).delete()
    Assignment.objects.all().delete()
    call_command("import_annotations", str(path), "--batch", "export-facts")
    stored = Annotation.objects.filter(annotator__username="e-ann2")
    assert [a.constraints_met for a in stored] == [[True, False]] * 2
    assert all("prompt_ambiguous" in a.flags for a in stored)
    assert Batch.objects.count() == 1


def test_import_refuses_answers_that_do_not_fit_the_item(tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    make_batch("fit", n_items=1)
    header = "item_id,annotator,coherence,ignores_hard_constraint,partial_compliance,constraints_met\n"
    for row, message in [
        ("fit-0,x1,3,0,0,met\n", "gives 1 answer(s) but item `fit-0` has 2 hard constraint(s)"),
        ("fit-0,x1,3,0,0,met;maybe\n", "`met;maybe` is not a list of answers"),
        (
            "fit-0,x1,3,0,0,met;not_met\n",
            "the answers imply the flags partial_compliance but the row sets none",
        ),
    ]:
        path = tmp_path / "a.csv"
        path.write_text(header + row, encoding="utf-8")
        with pytest.raises(CommandError, match=re.escape(message)):
            call_command("import_annotations", str(path), "--batch", "fit")
    assert Annotation.objects.count() == 0


def test_histogram_bars_are_labelled_in_percent_with_the_count_in_the_axis_title():
    from annotator.plots import distribution_svg

    svg = distribution_svg("Coherence", [1, 2, 3, 4, 5], [0, 1, 5, 9, 5], mean=3.9)
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    # svg.fonttype = none keeps the labels as text: 1/20 = 5 %, 5/20 = 25 %, 9/20 = 45 %.
    assert {"0%", "5%", "25%", "45%"} <= set(texts)
    assert "9" not in texts  # no bare count on the percent axis
    assert any("n = 20 ratings" in t for t in texts)
