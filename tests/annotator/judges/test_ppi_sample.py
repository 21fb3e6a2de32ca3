"""PPI++ and the labelled set it assumes random: the queue's seeded order and ``ppi.sample``.

A batch uploaded sorted by judge score and labelled in file order gives PPI++ the lowest-scored items as
its "sample": the estimate is biased and its interval misses the batch's mean. Handed out in the batch's
random order, the same half-labelled batch gives an interval that covers it.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotator.judges.selectors.sample import (
    DECLARED_RANDOM,
    NOT_RANDOM,
    RANDOM_ORDER,
    WINDOW,
    prefix_holes,
)
from annotator.judges.selectors.validation import judge_ppi
from annotator.judges.services.review import ranked_queue_first
from annotator.models import Annotation, Batch, Item, Judge, JudgeScore
from annotator.rating.services.annotations import annotation_submit
from annotator.rating.services.assignment import assignment_skip, item_next_for_annotator
from annotator.rating.services.queue_order import queue_ranks, random_key
from annotator.reports.selectors.batch_report import batch_report
from annotator.uploads.services.batches import batch_import_file
from hcs.rubric import Rubric
from tests.factories import PASSWORD, make_annotation, make_user

N_ITEMS = 120  # the simulations' batch; the one labelled through the database is smaller
DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def _population(rng, n=N_ITEMS):
    """Human means on 1–5 and a judge that tracks them, sorted by the judge's score (the upload's order)."""
    quality = rng.normal(3, 0.9, n)
    human = np.clip(np.round(quality + rng.normal(0, 0.4, n)), 1, 5)
    judge = np.clip(quality + 0.4 + rng.normal(0, 0.6, n), 1, 5)
    order = np.argsort(judge, kind="stable")
    return human[order], judge[order]


def _ppi(human, judge, labelled):
    """The report's PPI++ entry (``judge_ppi``, as the report builds it) for one labelled set."""
    entry = judge_ppi(
        judge="j",
        dimension="coherence",
        label="Coherence",
        human_mean=np.where(labelled, human, np.nan),
        judged={row: float(s) for row, s in enumerate(judge)},
        item_system=np.zeros(len(human), dtype=int),
        system_names=["s"],
    )
    return entry.to_json()


@pytest.mark.slow
def test_a_batch_sorted_by_judge_score_half_labelled_in_the_queues_order_covers_its_mean():
    """≥ 200 simulated batches, each with its own seed: the queue hands items out in the order of
    ``queue_ranks`` (what the upload stores and the lease sorts on), half are labelled; the 95 % interval
    covers the batch's full human mean 93–97 % of the time. In file order (the queue before the random
    order) the same labels are the lowest-scored half, the estimate is biased and the interval almost never
    covers. The interval is ``ci95``, the one for the batch's own items (finite population): half the batch
    is labelled, so the super-population interval covers more than 97 %."""
    rng = np.random.default_rng(34)
    ids = [f"item-{i}" for i in range(N_ITEMS)]
    covered, file_covered, errors, file_errors = [], [], [], []
    for sim in range(400):
        human, judge = _population(rng)
        target = human.mean()
        rank = np.array(queue_ranks(1000 + sim, ids, range(N_ITEMS)))
        labelled = np.zeros(N_ITEMS, dtype=bool)
        labelled[np.argsort(rank)[: N_ITEMS // 2]] = True
        got = _ppi(human, judge, labelled)
        covered.append(got["ci95"][0] <= target <= got["ci95"][1])
        errors.append(got["estimate"] - target)
        in_file_order = np.arange(N_ITEMS) < N_ITEMS // 2
        old = _ppi(human, judge, in_file_order)
        file_covered.append(old["ci95"][0] <= target <= old["ci95"][1])
        file_errors.append(old["estimate"] - target)
    coverage = float(np.mean(covered))
    assert 0.93 <= coverage <= 0.97, coverage
    assert abs(np.mean(errors)) < 3 * np.std(errors) / np.sqrt(len(errors))  # no bias beyond chance
    assert np.mean(file_covered) < 0.5 and abs(np.mean(file_errors)) > 5 * np.std(file_errors) / np.sqrt(400)


def test_prefix_holes_excuse_live_leases_and_the_window_but_never_a_skip():
    rank = np.arange(200)
    none = np.zeros(200, dtype=bool)
    labelled = rank < 100
    assert prefix_holes(rank, labelled, none, none).is_prefix
    ragged = labelled.copy()
    ragged[90:100] = False
    ragged[100:110] = True  # the lease's random pick among the first free items
    assert prefix_holes(rank, ragged, none, none) == prefix_holes(rank, ragged, none, none)
    assert (
        prefix_holes(rank, ragged, none, none).n_holes == 10
        and prefix_holes(rank, ragged, none, none).is_prefix
    )
    skipped = none.copy()
    skipped[95] = True
    assert not prefix_holes(rank, ragged, none, skipped).is_prefix
    leased = skipped.copy()  # skipped by one, on a live lease with the next annotator
    assert prefix_holes(rank, ragged, leased, skipped).is_prefix
    sparse = rank % 3 == 0  # every third item: far more holes than the window
    assert prefix_holes(rank, sparse, none, none).n_holes > WINDOW
    assert not prefix_holes(rank, sparse, none, none).is_prefix


def _sorted_upload(name, human, judge):
    lines = ["item_id,system_id,prompt,response"]
    lines += [f"{name}-{i},sys,Prompt {i},Response scored {judge[i]:.3f}" for i in range(len(human))]
    return batch_import_file(
        data="\n".join(lines).encode(), filename=f"{name}.csv", name=name, k=3, rubric=Rubric.default()
    )


def _judge_every_item(batch, judge):
    j = Judge.objects.create(name=f"judge-{batch.name}")
    items = list(batch.items.order_by("position"))
    JudgeScore.objects.bulk_create(
        JudgeScore(judge=j, item=item, dimension="coherence", raw_value=v, scale_min=1, scale_max=5, value=v)
        for item, v in zip(items, judge)
    )
    return j


def _label_through_the_queue(batch, human, n_items, people=None):
    """Three annotators take turns at the queue (lease, submit) until ``n_items`` items have their k."""
    people = people or [make_user(f"{batch.name}-{n}") for n in range(3)]
    value = {f"{batch.name}-{i}": int(h) for i, h in enumerate(human)}
    while Item.objects.filter(batch=batch, n_annotations__gte=3).count() < n_items:
        for person in people:
            lease = item_next_for_annotator(batch=batch, annotator=person)
            scores = dict.fromkeys(DIMS, value[lease.item.item_id])
            annotation_submit(item=lease.item, annotator=person, scores=scores, constraints_met=[])
    return people


@pytest.mark.slow
@pytest.mark.django_db
def test_a_sorted_upload_labelled_through_the_queue_is_a_random_order_sample(client):
    rng = np.random.default_rng(5)
    human, judge = _population(rng)
    batch = _sorted_upload("sorted", human, judge)
    assert batch.order_seed is not None
    ranks = dict(batch.items.values_list("item_id", "queue_rank"))
    assert ranks == {i: random_key(batch.order_seed, i) for i in ranks}  # anyone can redraw the order
    j = _judge_every_item(batch, judge)
    _label_through_the_queue(batch, human, N_ITEMS // 2)
    labelled = set(Item.objects.filter(batch=batch, n_annotations__gt=0).values_list("item_id", flat=True))
    first = sorted(ranks, key=ranks.get)
    assert len(labelled) >= N_ITEMS // 2 and labelled <= set(first[: N_ITEMS // 2 + WINDOW])
    positions = sorted(int(i.rsplit("-", 1)[1]) for i in labelled)
    assert np.mean(positions) == pytest.approx((N_ITEMS - 1) / 2, abs=15)  # not the file's first half
    entry = batch_report(batch=batch, n_resamples=20).sections["judges"].to_json()[j.name]["coherence"]["ppi"]
    assert entry["sample"] == RANDOM_ORDER and f"seed {batch.order_seed}" in entry["sample_why"]
    assert entry["estimate"] is not None and entry["ci95"][0] < entry["ci95"][1]
    assert entry["n_labelled"] == len(labelled)

    # The methods paragraph states the order and its seed.
    researcher = make_user("res", role="researcher")
    assert client.login(username=researcher.username, password=PASSWORD)
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    assert f"random order (seed {batch.order_seed}" in data["methods"]


@pytest.mark.slow
@pytest.mark.django_db
def test_a_batch_in_file_order_gets_no_estimate_and_the_page_says_why(client):
    """A batch from before the random order (the migration leaves its seed empty): the same labels are the
    lowest-scored half, and the report withholds PPI++ instead of printing a biased interval."""
    rng = np.random.default_rng(6)
    human, judge = _population(rng)
    batch = _sorted_upload("old", human, judge)
    Batch.objects.filter(pk=batch.pk).update(order_seed=None)
    Item.objects.filter(batch=batch).update(queue_rank=models_position())
    batch.refresh_from_db()
    j = _judge_every_item(batch, judge)
    _label_through_the_queue(batch, human, 70)
    labelled = Item.objects.filter(batch=batch, n_annotations__gt=0).values_list("position", flat=True)
    assert max(labelled) < 70 + WINDOW  # the file's first items: the lowest judge scores
    entry = batch_report(batch=batch, n_resamples=20).sections["judges"].to_json()[j.name]["coherence"]["ppi"]
    assert entry["sample"] == NOT_RANDOM and "file order" in entry["sample_why"]
    assert entry["estimate"] is None and entry["ci95"] is None and entry["judge_only"]["estimate"] is not None
    assert "select_for_review" in entry["sample_fix"] and entry["n_labelled"] == len(labelled)
    researcher = make_user("res", role="researcher")
    assert client.login(username=researcher.username, password=PASSWORD)
    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "No estimate: the labelled items are not a random sample." in page and "file order" in page
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    assert "order of the uploaded file" in data["methods"]


def models_position():
    from django.db.models import F

    return F("position")


@pytest.mark.django_db
def test_an_item_everyone_skipped_before_the_last_label_makes_the_sample_not_random():
    rng = np.random.default_rng(7)
    human, judge = _population(rng, 30)
    batch = _sorted_upload("skips", human, judge)
    j = _judge_every_item(batch, judge)
    people = [make_user(f"s{n}") for n in range(3)]
    leases = [item_next_for_annotator(batch=batch, annotator=person) for person in people]
    skipped = leases[0].item  # the first item the queue hands out, to all three (closest to completion)
    assert all(lease.item == skipped for lease in leases)
    for person in people:  # everyone skips it
        assignment_skip(item=skipped, annotator=person, reason="cannot judge this")
    labelled = Item.objects.filter(batch=batch, n_annotations__gt=0)
    while labelled.count() < 3 or not labelled.filter(queue_rank__gt=skipped.queue_rank).exists():
        # Someone may find nothing left for them (every item they have not seen is complete or taken):
        # the others go on; the loop needs only one label ranked after the skipped item.
        leases = [item_next_for_annotator(batch=batch, annotator=person) for person in people]
        assert any(leases), (
            "nobody could be given an item before one ranked after the skipped one was labelled"
        )
        for person, lease in zip(people, leases, strict=True):
            if lease is not None:
                annotation_submit(
                    item=lease.item, annotator=person, scores=dict.fromkeys(DIMS, 3), constraints_met=[]
                )
    entry = batch_report(batch=batch, n_resamples=20).sections["judges"].to_json()[j.name]["coherence"]["ppi"]
    assert entry["sample"] == NOT_RANDOM and "1 of them skipped" in entry["sample_why"]
    assert entry["estimate"] is None


@pytest.mark.django_db
def test_offline_labels_count_as_random_only_when_declared(tmp_path):
    rng = np.random.default_rng(8)
    human, judge = _population(rng, 20)
    batch = _sorted_upload("offline", human, judge)
    j = _judge_every_item(batch, judge)
    lines = ["item_id,annotator," + ",".join(DIMS)]
    picked = rng.choice(20, 8, replace=False)
    lines += [f"offline-{i},{who},{','.join(['3'] * 5)}" for i in picked for who in ("a1", "a2")]
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(lines) + "\n")

    def entry():
        batch.refresh_from_db()  # the import changed its declaration
        return (
            batch_report(batch=batch, n_resamples=20).sections["judges"].to_json()[j.name]["coherence"]["ppi"]
        )

    out = io.StringIO()
    call_command("import_annotations", str(path), "--batch", "offline", stdout=out)
    assert "Not declared a random sample" in out.getvalue()
    got = entry()
    assert got["sample"] == NOT_RANDOM and "--labelled-at-random" in got["sample_why"] + got["sample_fix"]
    assert got["estimate"] is None and got["ci95"] is None

    # The same file declared a random sample (a second import of other items with the flag).
    more = tmp_path / "more.csv"
    rest = [i for i in range(20) if i not in picked][:4]
    more.write_text(
        "\n".join(
            ["item_id,annotator," + ",".join(DIMS)] + [f"offline-{i},a1,{','.join(['4'] * 5)}" for i in rest]
        )
        + "\n"
    )
    call_command(
        "import_annotations", str(more), "--batch", "offline", "--labelled-at-random", stdout=io.StringIO()
    )
    got = entry()
    assert got["sample"] == DECLARED_RANDOM and got["estimate"] is not None
    assert Annotation.objects.filter(item__batch=batch, source=Annotation.Source.IMPORT).count() == 20

    # Queue labels on top of declared offline ones: still declared_random while they follow the order.
    person = make_user("web")
    lease = item_next_for_annotator(batch=batch, annotator=person)
    annotation_submit(item=lease.item, annotator=person, scores=dict.fromkeys(DIMS, 2), constraints_met=[])
    assert entry()["sample"] == DECLARED_RANDOM


@pytest.mark.django_db
def test_queue_labels_mixed_with_undeclared_offline_ones_are_not_random():
    rng = np.random.default_rng(9)
    human, judge = _population(rng, 20)
    batch = _sorted_upload("mixed", human, judge)
    j = _judge_every_item(batch, judge)
    person = make_user("web")
    for _ in range(3):
        lease = item_next_for_annotator(batch=batch, annotator=person)
        annotation_submit(
            item=lease.item, annotator=person, scores=dict.fromkeys(DIMS, 2), constraints_met=[]
        )
    assert (
        batch_report(batch=batch, n_resamples=20)
        .sections["judges"]
        .to_json()[j.name]["coherence"]["ppi"]["sample"]
        == RANDOM_ORDER
    )
    make_annotation(batch.items.order_by("-queue_rank").first(), make_user("off"), dict.fromkeys(DIMS, 5))
    got = batch_report(batch=batch, n_resamples=20).sections["judges"].to_json()[j.name]["coherence"]["ppi"]
    assert got["sample"] == NOT_RANDOM and got["estimate"] is None


@pytest.mark.django_db
def test_the_not_random_panel_says_how_many_were_imported_and_gives_advice_that_can_be_followed(client):
    """The walk's panel said "12 labelled items were imported" beside a Labelled column of 16, and told
    the researcher to "import the file again with --labelled-at-random", which is refused (its rows are
    stored already); its draw command read "select_for_review BATCH --draw BUDGET"."""
    rng = np.random.default_rng(10)
    human, judge = _population(rng, 20)
    batch = _sorted_upload("mixed labels", human, judge)
    j = _judge_every_item(batch, judge)
    person = make_user("web")
    for _ in range(3):
        lease = item_next_for_annotator(batch=batch, annotator=person)
        annotation_submit(
            item=lease.item, annotator=person, scores=dict.fromkeys(DIMS, 2), constraints_met=[]
        )
    unlabelled = batch.items.filter(n_annotations=0).order_by("-queue_rank").first()
    make_annotation(unlabelled, make_user("off"), dict.fromkeys(DIMS, 5))
    got = batch_report(batch=batch, n_resamples=20).sections["judges"].to_json()[j.name]["coherence"]["ppi"]
    assert got["sample"] == NOT_RANDOM
    assert got["sample_why"].startswith("1 of the 4 labelled items was imported from a file")
    fix = got["sample_fix"]
    assert "import the file again" not in fix and "next import" in fix
    assert "select_for_review 'mixed labels' --draw N" in fix
    # The admin's way it names exists: the batch's change form in the Django admin has the field.
    get_user_model().objects.create_superuser("boss", password=PASSWORD)
    assert client.login(username="boss", password=PASSWORD)
    form = client.get(reverse("admin:annotator_batch_change", args=[batch.pk])).content.decode()
    assert 'name="labels_declared_random"' in form and "Labels declared random" in form


@pytest.mark.django_db
def test_labels_given_after_a_ranked_list_was_put_first_are_not_random():
    """A batch smaller than the lease's window has no hole the prefix test could see: a ranked list put
    first (the items the judges disagree on most) is recorded, and queue labels after it are not_random."""
    rng = np.random.default_rng(7)
    human, judge = _population(rng, n=30)
    batch = _sorted_upload("ranked", human, judge)
    j = _judge_every_item(batch, judge)
    people = _label_through_the_queue(batch, human, 3)
    before = (
        batch_report(batch=batch, n_resamples=20).sections["judges"].to_json()[j.name]["coherence"]["ppi"]
    )
    assert before["sample"] == RANDOM_ORDER
    ranked = [f"ranked-{i}" for i in range(29, 19, -1)]  # the highest judge scores, as a ranked list would be
    assert ranked_queue_first(batch=batch, item_ids=ranked) == 10
    batch.refresh_from_db()
    assert batch.ranked_first_at is not None
    _label_through_the_queue(batch, human, 6, people)
    entry = batch_report(batch=batch, n_resamples=20).sections["judges"].to_json()[j.name]["coherence"]["ppi"]
    assert entry["sample"] == NOT_RANDOM and "ranked list" in entry["sample_why"]
    assert entry["estimate"] is None and "select_for_review" in entry["sample_fix"]
