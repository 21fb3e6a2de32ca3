"""From a draw to the report: an admin draws items on the review page, people label them through the
rating page, and the report's panel reads the weighted estimate of exactly those labels."""

import json

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import Annotation, Judge, JudgeScore, ReviewDraw, Score
from tests.factories import make_batch, make_user

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
N_ITEMS = 24


@pytest.mark.django_db
def test_draw_then_people_label_the_drawn_items_then_the_panel_weights_them():
    batch = make_batch("flow", n_items=N_ITEMS, systems=("sys-a", "sys-b"), constraints=())
    quality = {item.pk: 1 + n % 5 for n, item in enumerate(batch.items.order_by("position"))}
    a, b = Judge.objects.create(name="a"), Judge.objects.create(name="b")
    for n, item in enumerate(batch.items.all()):
        for judge, shift in ((a, 0.5), (b, (0.0, 0.5, 2.0)[n % 3])):  # b disagrees by 0, 0.5 or 2 points
            value = min(5.0, quality[item.pk] + shift)
            JudgeScore.objects.create(
                judge=judge,
                item=item,
                dimension="coherence",
                raw_value=value,
                scale_min=1,
                scale_max=5,
                value=value,
            )

    admin = Client()
    admin.force_login(make_user("boss", role="admin"))
    page = admin.post(reverse("review_draw", args=[batch.pk]), {"budget": "6", "seed": "21"}, follow=True)
    assert "The report now weights their labels" in page.content.decode()
    draw = ReviewDraw.objects.get(batch=batch)
    drawn = set(draw.rows.filter(drawn=True).values_list("item", flat=True))
    assert len(drawn) >= 2

    # People rate what the rating page hands them, each item at its quality, until every drawn item has
    # a label; the lease may hand out other items too (it picks at random among the first free ones).
    people = [Client() for _ in range(3)]
    for n, person in enumerate(people):
        person.force_login(make_user(f"rater{n}"))
    for _ in range(N_ITEMS):
        for person in people:
            if drawn <= set(Annotation.objects.values_list("item", flat=True)):
                break
            response = person.get(reverse("annotate_next", args=[batch.pk]))
            item = response.context.get("item") if response.context else None
            if item is None:
                continue
            scores = {f"score_{d}": str(quality[item.pk]) for d in DIMS}
            assert person.post(reverse("annotate_submit", args=[item.pk]), scores).status_code in (200, 302)
    rated = set(Annotation.objects.values_list("item", flat=True))
    assert drawn <= rated

    researcher = Client()
    researcher.force_login(make_user("r", role="researcher"))
    report = json.loads(researcher.get(reverse("report_export", args=[batch.pk, "json"])).content)
    entry = report["judges"]["a"]["coherence"]["ppi"]
    assert entry["estimator"] == "active_inference" and entry["draw"]["id"] == draw.pk
    assert entry["draw"]["n_drawn"] == entry["draw"]["n_drawn_labelled"] == len(drawn)
    assert entry["draw"]["n_labels_not_used"] == len(rated - drawn)
    # The same estimate from the database rows and the recorded π, by the formula of Zrnic & Candès 2024.
    human = {
        item: np.mean(list(values))
        for item in rated
        for values in [Score.objects.filter(item=item, dimension="coherence").values_list("value", flat=True)]
    }
    assert all(human[item] == quality[item] for item in rated)  # what the rating page saved
    f = dict(JudgeScore.objects.filter(judge=a).values_list("item", "value"))
    terms = []
    for item, pi, was_drawn in draw.rows.values_list("item", "pi", "drawn"):
        g = entry["lambda"] * f[item] + entry["offset"]
        terms.append(g + ((human[item] - g) / pi if was_drawn else 0.0))
    assert entry["estimate"] == pytest.approx(np.mean(terms))
    assert entry["n_labelled"] == len(drawn) and entry["n_unlabelled"] == N_ITEMS - len(drawn)
    page = researcher.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "Estimator: active inference" in page and f"{entry['estimate']:.3f}" in page
