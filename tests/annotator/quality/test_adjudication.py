"""Adjudication: widest disagreements first, annotations shown without their authors, labels kept
beside the raw annotations in the exports, a granted adjudicator, and gold in one step."""

import pytest
from django.urls import reverse

from annotator.models import Adjudication, Annotation, GoldItem, QualityRule
from annotator.reports.exports.json_export import report_to_dict
from annotator.reports.selectors.batch_report import batch_report
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def vec(*values):
    return dict(zip(DIMS, values))


@pytest.fixture
def disputed():
    batch = make_batch("disputed", n_items=3, constraints=("avoid tolls",))
    items = list(batch.items.order_by("position"))
    people = [make_user(name) for name in ("alice", "bob", "carol")]
    table = [  # item 0: spread 4 on coherence; item 1: spread 1; item 2: no disagreement
        [vec(1, 3, 3, 3, 3), vec(5, 3, 3, 3, 3), vec(3, 3, 3, 3, 3)],
        [vec(4, 4, 4, 4, 4), vec(4, 5, 4, 4, 4), vec(4, 4, 4, 4, 4)],
        [vec(2, 2, 2, 2, 2)] * 3,
    ]
    for item, row in zip(items, table):
        for person, scores in zip(people, row):
            a = make_annotation(item, person, scores, comment=f"{person.username} thinks so")
            Annotation.objects.filter(pk=a.pk).update(constraints_met=[True])
    return batch, items, people


def test_queue_orders_by_widest_spread_and_hides_names(client, disputed):
    batch, items, _ = disputed
    client.force_login(make_user("res", role="researcher"))
    response = client.get(reverse("adjudication_queue", args=[batch.pk]))
    assert [(r["item"].item_id, r["spread"]) for r in response.context["rows"]] == [
        (items[0].item_id, 4),
        (items[1].item_id, 1),
    ]
    page = client.get(reverse("adjudication_item", args=[items[0].pk])).content.decode()
    assert "Annotator A" in page and "Annotator C" in page
    assert "avoid tolls: met" in page and "thinks so" in page
    # Names appear nowhere, not even inside the comments' authorship or a title.
    body = page.replace("alice thinks so", "").replace("bob thinks so", "").replace("carol thinks so", "")
    assert "alice" not in body and "bob" not in body and "carol" not in body


def test_adjudicated_label_sits_beside_the_raw_annotations_in_the_json(client, disputed):
    batch, items, _ = disputed
    client.force_login(make_user("res", role="researcher"))
    url = reverse("adjudication_item", args=[items[0].pk])
    form = {f"score_{d}": v for d, v in vec(4, 3, 3, 3, 3).items()}
    assert client.post(url, form).status_code == 422  # a note is required
    assert (
        client.post(
            url,
            {
                **form,
                "score_instruction_following": "4",
                "flags": "ignores_hard_constraint",
                "comment": "cap broken",
            },
        ).status_code
        == 422
    )  # the rubric's caps apply
    assert client.post(url, {**form, "comment": "The route is fine but wordy."}).status_code == 302
    adj = Adjudication.objects.get(item=items[0])
    assert adj.scores == vec(4, 3, 3, 3, 3) and adj.note == "The route is fine but wordy."
    assert Annotation.objects.filter(item=items[0]).count() == 3  # raw annotations untouched
    data = report_to_dict(batch_report(batch=batch, n_resamples=20))
    assert data["adjudications"] == [
        {
            "item_id": items[0].item_id,
            "system_id": items[0].system_id,
            "scores": vec(4, 3, 3, 3, 3),
            "flags": [],
            "overall_hcs": pytest.approx(0.4 * 4 + 0.6 * 3),
            "note": "The route is fine but wordy.",
            "adjudicator": "res",
            "at": adj.updated_at.isoformat(),
        }
    ]
    by_name = {a["annotator"]: a["adjudication_agreement"] for a in data["annotators"]}
    # alice gave 1 where the label says 4: 4 of 5 dimensions equal, MAE 3/5; carol: |3 − 4| = 1 → 0.2.
    assert by_name["alice"] == {"n": 1, "exact": pytest.approx(0.8), "mae": pytest.approx(0.6)}
    assert by_name["carol"] == {"n": 1, "exact": pytest.approx(0.8), "mae": pytest.approx(0.2)}
    # The agreement statistics do not use the adjudicated label.
    assert data["dimensions"]["coherence"]["n_ratings"] == 9


def test_a_granted_adjudicator_reaches_only_that_batch(client, disputed):
    batch, items, _ = disputed
    other = make_batch("other", n_items=1)
    helper = make_user("helper", role="annotator")
    client.force_login(helper)
    assert client.get(reverse("adjudication_queue", args=[batch.pk])).status_code == 403
    researcher = make_user("res", role="researcher")
    research = client.__class__()
    research.force_login(researcher)
    research.post(reverse("adjudicator_grant", args=[batch.pk]), {"username": "helper"})
    assert client.get(reverse("adjudication_queue", args=[batch.pk])).status_code == 200
    assert reverse("adjudication_queue", args=[batch.pk]) in client.get(reverse("home")).content.decode()
    assert client.get(reverse("adjudication_item", args=[items[0].pk])).status_code == 200
    assert client.get(reverse("adjudication_queue", args=[other.pk])).status_code == 403
    assert client.get(reverse("report_batch", args=[batch.pk])).status_code == 403  # never the report
    research.post(reverse("adjudicator_grant", args=[batch.pk]), {"username": "helper", "revoke": "1"})
    assert client.get(reverse("adjudication_queue", args=[batch.pk])).status_code == 403


def test_an_adjudicated_item_becomes_gold_of_a_later_batch_in_one_step(client, disputed):
    batch, items, _ = disputed
    later = make_batch("later", n_items=2)
    client.force_login(make_user("res", role="researcher"))
    client.post(
        reverse("adjudication_item", args=[items[0].pk]),
        {**{f"score_{d}": v for d, v in vec(4, 3, 3, 3, 3).items()}, "comment": "Expert view."},
    )
    client.post(reverse("adjudication_to_gold", args=[items[0].pk]), {"batch": later.pk, "kind": "training"})
    gold = GoldItem.objects.get(batch=later)
    assert gold.item_id == items[0].item_id and gold.kind == "training" and gold.scores == vec(4, 3, 3, 3, 3)
    assert gold.explanation == "Expert view." and gold.prompt == items[0].prompt
    assert QualityRule.objects.get(batch=later).training_items == 1
    response = client.post(
        reverse("adjudication_to_gold", args=[items[0].pk]), {"batch": batch.pk}, follow=True
    )
    assert "cannot be gold in its own batch" in response.content.decode()
    response = client.post(
        reverse("adjudication_to_gold", args=[items[0].pk]), {"batch": later.pk}, follow=True
    )
    assert "already has an item" in response.content.decode()
    assert GoldItem.objects.filter(batch=later).count() == 1
