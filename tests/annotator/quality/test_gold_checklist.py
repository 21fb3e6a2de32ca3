"""Gold constraint flags must be reachable through the hard-constraint checklist (which sets them on
the rating page), and agree with ``gold_constraints_met`` when it is given: otherwise a careful
annotator cannot match the expert, and training screens them out."""

import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotator.management.commands.load_demo import DEMO_BATCH, DEMO_DIR
from annotator.models import AnnotatorStanding, Batch, GoldAnswer
from annotator.uploads.files.batch_file import parse_batch_file
from hcs.rubric import Rubric
from tests.factories import make_user

DIMS = "gold_coherence,gold_relevance,gold_instruction_following,gold_safety_compliance,gold_fluency"
HEADER = f"item_id,prompt,response,constraints,{DIMS},gold_flags,gold_constraints_met,gold_kind\n"


def parse(text):
    return parse_batch_file(text.encode(), filename="items.csv", rubric=Rubric.default())


def messages(parsed):
    return [str(e) for e in parsed.errors]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        # one constraint: the checklist can say met or not met, never "some met"
        (
            "g,p,r,avoid tolls,3,3,3,3,3,partial_compliance,,training",
            "row 2, column `gold_flags`: has `partial_compliance`, which the checklist of an item with 1 hard "
            "constraint cannot set (it sets no constraint flag or `ignores_hard_constraint`)",
        ),
        # the demo's defect: one of two constraints met gives partial compliance, not "ignores"
        (
            "g,p,r,avoid tolls;arrive by 9,4,3,2,4,5,ignores_hard_constraint,not_met;met,training",
            "row 2, column `gold_flags`: has `ignores_hard_constraint`, but the checklist answers `not_met;met` "
            "(gold_constraints_met) set `partial_compliance`",
        ),
        (
            "g,p,r,a;b,4,3,5,4,5,,not_met;not_met,check",
            "row 2, column `gold_flags`: has no constraint flag, but the checklist answers `not_met;not_met` "
            "(gold_constraints_met) set `ignores_hard_constraint`",
        ),
        (
            "g,p,r,a;b,4,3,3,4,5,partial_compliance,met,check",
            "row 2, column `gold_constraints_met`: gives 1 answer, but the item has 2 hard constraints",
        ),
        (
            "g,p,r,,4,3,3,4,5,,met,check",
            "row 2, column `gold_constraints_met`: gives 1 answer, but the item has 0 hard constraints",
        ),
        (
            "g,p,r,a;b,4,3,3,4,5,partial_compliance,met;maybe,check",
            "row 2, column `gold_constraints_met`: `met;maybe` is not a list of met / not_met answers",
        ),
    ],
)
def test_unreachable_gold_flags_are_refused_by_row_and_column(row, expected):
    parsed = parse(HEADER + "a1,p,r,,,,,,,,,\n" + row + "\n")
    assert not parsed.ok
    assert any(m.startswith(expected.replace("row 2", "row 3")) for m in messages(parsed)), messages(parsed)


@pytest.mark.parametrize(
    "row",
    [
        "g,p,r,avoid tolls,3,3,2,3,3,ignores_hard_constraint,,training",  # one constraint, not met
        "g,p,r,a;b,3,3,3,3,3,partial_compliance,,training",  # some of two met
        "g,p,r,a;b,3,3,3,3,3,partial_compliance,not_met;met,training",
        "g,p,r,a;b,3,3,5,3,3,,met;met,check",
        'g,p,r,a;b,3,3,5,3,3,prompt_ambiguous,"[""met"", ""met""]",check',  # a JSON list too
        "g,p,r,,3,3,3,3,3,partial_compliance,,check",  # no checklist: the annotator ticks the flag
    ],
)
def test_reachable_gold_flags_are_accepted(row):
    parsed = parse(HEADER + row + "\n")
    assert parsed.ok, messages(parsed)


def test_the_demo_gold_file_passes_the_check_and_the_toll_bridge_gold_is_partial_compliance():
    rows = [json.loads(line) for line in (DEMO_DIR / "gold.jsonl").read_text(encoding="utf-8").splitlines()]
    parsed = parse_batch_file(
        (DEMO_DIR / "gold.jsonl").read_bytes(), filename="gold.jsonl", rubric=Rubric.default()
    )
    assert parsed.ok, messages(parsed)
    toll = next(g for g in parsed.gold if rows[g.index]["item_id"] == "training-toll-bridge")
    assert toll.flags == ["partial_compliance"]


@pytest.mark.django_db
def test_a_careful_demo_worker_who_matches_the_experts_passes_training():
    """Walk the demo's training as a worker who answers the checklist and the scores as the expert did."""
    call_command("load_demo", stdout=__import__("io").StringIO())
    batch = Batch.objects.get(name=DEMO_BATCH)
    gold = {
        json.loads(line)["item_id"]: json.loads(line)
        for line in (DEMO_DIR / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    }
    user = make_user("careful")
    client = Client()
    client.force_login(user)
    client.post(reverse("study_consent", args=[batch.pk]), {"decision": "accept"})
    client.post(reverse("study_instructions", args=[batch.pk]))
    seen = []
    for _ in range(len(gold)):
        page = client.get(reverse("annotate_next", args=[batch.pk]))
        if page.status_code != 200 or page.context.get("item") is None or not page.context.get("training"):
            break
        item = page.context["item"]
        expert = gold[item.item_id]
        seen.append(item.item_id)
        data = {
            f"score_{d}": str(expert[f"gold_{d}"])
            for d in ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
        }
        data.update({f"constraint_{i}": answer for i, answer in enumerate(expert["gold_constraints_met"])})
        data["flags"] = [
            f for f in expert["gold_flags"] if f not in ("ignores_hard_constraint", "partial_compliance")
        ]
        action = page.context["action"]
        assert client.post(action, data).status_code == 200
    assert "training-toll-bridge" in seen
    standing = AnnotatorStanding.objects.get(batch=batch, annotator=user)
    assert standing.training == AnnotatorStanding.Training.PASSED and standing.screened_out_at is None
    assert GoldAnswer.objects.filter(annotator=user, gold_item__kind="training").count() == len(seen)
