"""The recorded review draw: what it stores, reproducibility by seed, refusals that change nothing, the
command, the page, the API, and the report's PPI panel switching to the weighted estimate and back."""

import csv
import json

import numpy as np
import pytest
import statsmodels.api as sm
from django.core.management import CommandError, call_command
from django.urls import reverse
from scipy.stats import t as student_t

from annotator.judges.selectors.review import ranked_candidates
from annotator.judges.services.review import DrawError, review_draw_make, review_draw_retire
from annotator.models import Judge, JudgeScore, ReviewDraw, ReviewDrawItem
from tests.annotator.api.conftest import assert_problem
from tests.factories import PASSWORD, make_annotation, make_batch, make_user, queue_places

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
PPI_KEYS = {
    "estimate",
    "ci95",
    "ci95_superpopulation",
    "n_labelled",
    "n_unlabelled",
    "lambda",
    "human_only",
    "judge_only",
}
N_ITEMS, N_BEFORE = 30, 3


def _score(judge, item, dimension, value):
    JudgeScore.objects.create(
        judge=judge, item=item, dimension=dimension, raw_value=value, scale_min=1, scale_max=5, value=value
    )


@pytest.fixture
def batch(db):
    """30 items in two systems, the first 3 annotated by two people. Judge a scores every dimension;
    judge b scores coherence only, disagreeing with a by 0, 0.5, 1 or 2 points, so the uncertainty varies."""
    batch = make_batch("draw", n_items=N_ITEMS, systems=("sys-a", "sys-b"), constraints=())
    a, b = Judge.objects.create(name="a"), Judge.objects.create(name="b")
    people = [make_user("p0"), make_user("p1")]
    for n, item in enumerate(batch.items.order_by("position")):
        quality = 1 + n % 5
        for d in DIMS:
            _score(a, item, d, float(quality))
        _score(b, item, "coherence", float(min(5, quality + (0, 0.5, 1, 2)[n % 4])))
        if n < N_BEFORE:
            for person in people:
                make_annotation(item, person, dict.fromkeys(DIMS, quality))
    return batch


def _positions(batch):
    return queue_places(batch)


def _recorded(draw):
    return sorted(draw.rows.values_list("item__item_id", "pi", "drawn", "labelled_before"))


def test_the_draw_records_every_candidate_and_puts_the_drawn_first(batch):
    draw = review_draw_make(batch=batch, budget=8, seed=3)
    ranked = {r.item_id: r.uncertainty for r in ranked_candidates(batch=batch)}
    rows = {r.item.item_id: r for r in draw.rows.select_related("item")}
    candidates = {i: r for i, r in rows.items() if not r.labelled_before}
    assert set(candidates) == set(ranked) and len(candidates) == N_ITEMS - N_BEFORE
    before = [r for r in rows.values() if r.labelled_before]
    assert len(before) == N_BEFORE and all(r.pi == 1.0 and r.drawn for r in before)
    # π ∝ uncertainty with half the budget spread evenly (no π reaches 1 here), Σπ = the budget; so every
    # π is at least half the uniform draw's.
    u = np.array([ranked[i] for i in candidates])
    pi = np.array([r.pi for r in candidates.values()])
    assert pi.sum() == pytest.approx(8)
    assert pi == pytest.approx(0.5 * 8 * u / u.sum() + 0.5 * 8 / len(u))
    assert pi.min() >= 0.5 * 8 / len(u)
    assert [r.uncertainty for r in candidates.values()] == pytest.approx(list(u))
    drawn = sorted(i for i, r in candidates.items() if r.drawn)
    assert 0 < len(drawn) < len(candidates)
    positions = _positions(batch)
    assert sorted(positions[i] for i in drawn) == list(range(len(drawn)))  # first in the queue
    assert (draw.budget, draw.seed, draw.mix, draw.judges) == (8, 3, 0.5, ["a", "b"])


def test_the_same_seed_draws_the_same_items(batch):
    first = _recorded(review_draw_make(batch=batch, budget=8, seed=3))
    review_draw_retire(batch=batch)
    again = review_draw_make(batch=batch, budget=8, seed=3)
    assert _recorded(again) == first
    review_draw_retire(batch=batch)
    other = _recorded(review_draw_make(batch=batch, budget=8, seed=4))
    assert [r[:2] for r in other] == [r[:2] for r in first]  # the same π
    assert [r[2] for r in other] != [r[2] for r in first]  # a different draw
    assert ReviewDraw.objects.filter(batch=batch).count() == 3  # retired draws stay on record


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget": 0}, "between 1 and 27"),
        ({"budget": -3}, "between 1 and 27"),
        ({"budget": 28}, "between 1 and 27"),
        ({"budget": "abc"}, "whole number of labels"),
        ({"budget": ""}, "whole number of labels"),
        ({"budget": "2.5"}, "whole number of labels"),
        ({"budget": 5, "seed": -1}, "seed must lie between"),
        ({"budget": 5, "seed": 2**31}, "seed must lie between"),
        ({"budget": 5, "seed": "x"}, "seed must be a whole number"),
        ({"budget": 5, "judges": ["nobody"]}, "No scores in batch 'draw' from judge(s) 'nobody'"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(batch, options, message):
    positions = _positions(batch)
    with pytest.raises(DrawError, match=message.replace("(", r"\(").replace(")", r"\)")):
        review_draw_make(batch=batch, **options)
    assert not ReviewDraw.objects.exists() and not ReviewDrawItem.objects.exists()
    assert _positions(batch) == positions


def test_no_judge_scores_nothing_unlabelled_and_a_draw_in_force_are_refused(batch, db):
    bare = make_batch("bare", n_items=4)
    with pytest.raises(DrawError, match="no judge scores yet"):
        review_draw_make(batch=bare, budget=1)
    done = make_batch("done", n_items=2, constraints=())
    judge = Judge.objects.get(name="a")
    for item in done.items.all():
        _score(judge, item, "coherence", 3.0)
        make_annotation(item, make_user(f"u{item.pk}"), dict.fromkeys(DIMS, 3))
    with pytest.raises(DrawError, match="no unlabelled item with a judge score"):
        review_draw_make(batch=done, budget=1)
    first = review_draw_make(batch=batch, budget=5, seed=1)
    positions = _positions(batch)
    with pytest.raises(DrawError, match=f"already has draw #{first.pk}"):
        review_draw_make(batch=batch, budget=5, seed=2)
    assert ReviewDraw.objects.count() == 1 and _positions(batch) == positions


def test_a_draw_never_changes(batch):
    draw = review_draw_make(batch=batch, budget=5, seed=1)
    draw.budget = 9
    with pytest.raises(ValueError, match="immutable"):
        draw.save()
    row = draw.rows.first()
    row.pi = 0.5
    with pytest.raises(ValueError, match="immutable"):
        row.save()
    assert ReviewDraw.objects.get().budget == 5


def _login(client, user):
    assert client.login(username=user.username, password=PASSWORD)


def _report_json(client, batch):
    return json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)["judges"]["a"]


def test_the_panel_weights_the_draws_labels_and_withholds_ppi_after_retiring(client, batch):
    researcher = make_user("r", role="researcher")
    _login(client, researcher)
    # No draw: the three labels were imported from a file without --labelled-at-random, so nothing says
    # they are a random sample, and PPI++ gives no estimate from them.
    first = _report_json(client, batch)["coherence"]["ppi"]
    assert set(first) == PPI_KEYS | {"sample", "sample_why", "sample_fix"}
    assert first["sample"] == "not_random" and first["estimate"] is None and first["ci95"] is None
    draw = review_draw_make(batch=batch, budget=10, seed=5)
    # The draw alone changes the report's revision: the stored report is not served after it. Until one of
    # the drawn items has a label there is no estimate: the labels from before the draw stand only for
    # themselves, and an interval over them alone would be too narrow for the population.
    waiting = _report_json(client, batch)["coherence"]["ppi"]
    assert waiting["estimator"] == "active_inference" and waiting["estimate"] is None
    assert waiting["draw"]["n_drawn_labelled"] == 0 and waiting["draw"]["n_labelled_before"] == N_BEFORE
    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "No estimate yet: none of the" in page
    people = [make_user("q0"), make_user("q1")]
    rows = list(draw.rows.select_related("item"))
    drawn = [r for r in rows if r.drawn and not r.labelled_before]
    assert len(drawn) >= 3
    human = {}
    for n, r in enumerate(drawn):
        for k, person in enumerate(people):
            make_annotation(r.item, person, dict.fromkeys(DIMS, 1 + (n + k) % 5))
        human[r.item_id] = np.mean([1 + (n + k) % 5 for k in range(2)])
    for r in rows:
        if r.labelled_before:
            human[r.item_id] = (
                1 + list(batch.items.order_by("pk").values_list("pk", flat=True)).index(r.item_id) % 5
            )
    entry = _report_json(client, batch)["coherence"]["ppi"]
    assert entry["estimator"] == "active_inference" and entry["draw"]["id"] == draw.pk
    assert entry["sample"] == "recorded_draw"
    assert entry["draw"]["n_drawn"] == entry["draw"]["n_drawn_labelled"] == len(drawn)
    assert entry["draw"]["n_labelled_before"] == N_BEFORE and entry["draw"]["n_labels_not_used"] == 0
    # θ̂ = mean[g + (Y − g) ξ/π], g = λ f + b, over every recorded item (Zrnic & Candès 2024, eq. 3).
    f = dict(JudgeScore.objects.filter(judge__name="a", dimension="coherence").values_list("item", "value"))
    g = {pk: entry["lambda"] * v + entry["offset"] for pk, v in f.items()}
    terms = [
        g[r.item_id] + ((human[r.item_id] - g[r.item_id]) / r.pi if r.item_id in human else 0.0) for r in rows
    ]
    assert entry["estimate"] == pytest.approx(np.mean(terms))
    assert (entry["n_labelled"], entry["n_unlabelled"]) == (len(human), N_ITEMS - len(human))
    # λ and b are a least-squares fit of the terms on c = 1 − ξ/π and a = f·c: each term's deviation is divided
    # by 1 − its leverage in that fit (statsmodels' HC3), and the quantile is Student's t on the labels less
    # the fit's rank. ci95 for the draw's population: Poisson sampling's Σ_drawn (Y − g)² (1 − π)/π² / M²;
    # ci95_superpopulation: the paper's SD of the terms / √M, here the HC3 standard error of the intercept.
    weight = np.array([1 / r.pi if r.item_id in human else 0.0 for r in rows])
    c = 1 - weight
    a = np.array([f[r.item_id] for r in rows]) * c
    columns = [np.ones(len(rows)), c - c.mean()] + ([a - a.mean()] if 0 < entry["lambda"] < 1 else [])
    design = np.column_stack(columns)
    fit = sm.OLS(np.array(terms), design).fit(cov_type="HC3")
    leverage = fit.get_influence().hat_matrix_diag
    q = student_t.ppf(0.975, len(human) - np.linalg.matrix_rank(design))
    var = sum(
        (human[r.item_id] - g[r.item_id]) ** 2 / (1 - h) ** 2 * (1 - r.pi) / r.pi**2
        for r, h in zip(rows, leverage)
        if r.item_id in human
    )
    half = q * np.sqrt(var) / len(rows)
    assert entry["ci95"] == pytest.approx([entry["estimate"] - half, entry["estimate"] + half])
    half = q * fit.bse[0]
    assert entry["ci95_superpopulation"] == pytest.approx(
        [entry["estimate"] - half, entry["estimate"] + half]
    )

    # A label the draw did not pick (the regular queue) is left out: the estimate does not move.
    other = next(r for r in rows if not r.drawn)
    make_annotation(other.item, people[0], dict.fromkeys(DIMS, 5))
    again = _report_json(client, batch)["coherence"]["ppi"]
    assert again["estimate"] == entry["estimate"] and again["draw"]["n_labels_not_used"] == 1

    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "Estimator: active inference" in page and f"review draw #{draw.pk}" in page
    assert "judge only and active inference</h4>" in page
    assert "Each 95 % CI is for the mean of <strong>this draw's population</strong>" in page
    assert '<span class="muted">population [' in page  # and the super-population interval below it
    card = client.get(reverse("judge_card", args=[batch.pk, Judge.objects.get(name="a").pk])).content.decode()
    assert "Estimator: active inference" in card

    # Retired, the draw's labels are no random sample of the batch any more: PPI++ is withheld, and says why.
    review_draw_retire(batch=batch)
    back = _report_json(client, batch)["coherence"]["ppi"]
    assert back["sample"] == "not_random" and back["estimate"] is None and back["ci95"] is None
    assert back["n_labelled"] == len(human) + 1 and back["judge_only"]["estimate"] is not None
    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "Estimator: active inference" not in page
    assert (
        "No estimate: the labelled items are not a random sample." in page and "--labelled-at-random" in page
    )


def test_the_command_draws_writes_every_candidate_and_retires(batch, tmp_path):
    out = tmp_path / "draw.csv"
    call_command("select_for_review", "draw", "--draw", "6", "--seed", "9", "--out", str(out))
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    draw = ReviewDraw.objects.get(retired_at__isnull=True)
    assert len(rows) == N_ITEMS and list(rows[0]) == [
        "item_id",
        "system_id",
        "pi",
        "drawn",
        "labelled_before",
        "uncertainty",
    ]
    recorded = {r.item.item_id: r for r in draw.rows.select_related("item")}
    assert all(float(r["pi"]) == recorded[r["item_id"]].pi for r in rows)
    before = [r for r in rows if r["labelled_before"] == "1"]
    assert (
        len(before) == N_BEFORE and all(float(r["pi"]) == 1.0 for r in before) and rows[-N_BEFORE:] == before
    )
    assert {r["item_id"] for r in rows if r["drawn"] == "1" and r["labelled_before"] == "0"} == {
        i for i, r in recorded.items() if r.drawn and not r.labelled_before
    }
    with pytest.raises(CommandError, match="already has draw"):
        call_command("select_for_review", "draw", "--draw", "6", "--out", str(tmp_path / "again.csv"))
    assert not (tmp_path / "again.csv").exists()
    with pytest.raises(CommandError, match="exactly one of"):
        call_command("select_for_review", "draw", "--draw", "6", "--n", "3", "--out", str(out))
    call_command("select_for_review", "draw", "--retire-draw")
    with pytest.raises(CommandError, match="no draw in force"):
        call_command("select_for_review", "draw", "--retire-draw")
    with pytest.raises(CommandError, match="between 1 and 27"):
        call_command("select_for_review", "draw", "--draw", "99", "--out", str(out))
    assert ReviewDraw.objects.filter(retired_at__isnull=True).count() == 0


def test_the_page_draws_for_admins_shows_the_draw_and_offers_the_csv(client, batch):
    researcher, admin = make_user("r", role="researcher"), make_user("boss", role="admin")
    _login(client, researcher)
    assert client.post(reverse("review_draw", args=[batch.pk]), {"budget": "5"}).status_code == 403
    _login(client, admin)
    response = client.post(reverse("review_draw", args=[batch.pk]), {"budget": "99"}, follow=True)
    assert "Nothing was drawn: the budget must lie between 1 and 27" in response.content.decode()
    assert not ReviewDraw.objects.exists()
    response = client.post(
        reverse("review_draw", args=[batch.pk]), {"budget": "5", "seed": "12"}, follow=True
    )
    draw = ReviewDraw.objects.get()
    assert draw.seed == 12 and draw.made_by == admin
    page = response.content.decode()
    assert f"Draw #{draw.pk} (budget 5, seed 12) drew" in page and f"Retire draw #{draw.pk}" in page
    _login(client, researcher)
    page = client.get(reverse("review_items", args=[batch.pk])).content.decode()
    assert f"Draw #{draw.pk} in force" in page and "Retire draw" not in page
    body = client.get(reverse("review_draw_csv", args=[batch.pk])).content.decode()
    assert body.splitlines()[0] == "item_id,system_id,pi,drawn,labelled_before,uncertainty"
    assert len(body.splitlines()) == 1 + N_ITEMS  # the candidates, then the items labelled before
    _login(client, admin)
    client.post(reverse("review_draw_retire", args=[batch.pk]))
    assert ReviewDraw.objects.get().retired_at is not None


def test_the_api_draws_reads_and_retires(api_as, batch):
    researcher, admin = api_as("researcher"), api_as("admin")
    assert_problem(researcher.post(f"/batches/{batch.pk}/review/draw", {"budget": 5}), 403)
    assert_problem(admin.post(f"/batches/{batch.pk}/review/draw", {"budget": 28}), 422)
    assert_problem(admin.post(f"/batches/{batch.pk}/review/draw", {"budget": 5, "judge": ["zz"]}), 422)
    assert_problem(researcher.get(f"/batches/{batch.pk}/review/draw"), 404)
    made = admin.post(f"/batches/{batch.pk}/review/draw", {"budget": 5, "seed": 8})
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["budget"], body["seed"], body["n_labelled_before"]) == (5, 8, N_BEFORE)
    candidates = [i for i in body["items"] if not i["labelled_before"]]
    assert len(body["items"]) == N_ITEMS and len(candidates) == N_ITEMS - N_BEFORE
    assert sum(i["pi"] for i in candidates) == pytest.approx(5)
    assert researcher.get(f"/batches/{batch.pk}/review/draw").json() == body
    assert_problem(admin.post(f"/batches/{batch.pk}/review/draw", {"budget": 5}), 409)
    assert admin.delete(f"/batches/{batch.pk}/review/draw").status_code == 204
    assert_problem(admin.delete(f"/batches/{batch.pk}/review/draw"), 404)


def test_the_ranked_list_is_not_put_first_while_a_draw_is_in_force(client, batch, tmp_path):
    draw = review_draw_make(batch=batch, budget=5, seed=1)
    positions = _positions(batch)
    admin = make_user("boss", role="admin")
    _login(client, admin)
    page = client.get(reverse("review_items", args=[batch.pk])).content.decode()
    assert f"Putting the ranked items first is off while draw #{draw.pk} is in force" in page
    response = client.post(reverse("review_queue_first", args=[batch.pk]), {"n": "5"}, follow=True)
    assert (
        f"Nothing was moved: batch &#x27;draw&#x27; has draw #{draw.pk} in force" in response.content.decode()
    )
    with pytest.raises(CommandError, match="retire the draw first"):
        call_command(
            "select_for_review", "draw", "--n", "5", "--out", str(tmp_path / "l.csv"), "--queue-first"
        )
    assert _positions(batch) == positions


@pytest.mark.parametrize(
    "form",
    [
        {"budget": "\x00"},
        {"budget": "1e9"},
        {"budget": "9" * 400},
        {"budget": "5", "seed": "\x00"},
        {"budget": "5", "seed": "9" * 400},
        {"budget": "5", "judge": "\x00<script>"},
        {"budget": "5", "judge": "a" * 10_000},
    ],
)
def test_hostile_draw_forms_change_nothing(client, batch, form):
    _login(client, make_user("boss", role="admin"))
    response = client.post(reverse("review_draw", args=[batch.pk]), form, follow=True)
    assert response.status_code == 200 and "Nothing was drawn:" in response.content.decode()
    assert "<script>" not in response.content.decode()
    assert not ReviewDraw.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"budget": 10**30},
        {"budget": "abc"},
        {"budget": 5, "seed": -1},
        {"budget": 5, "judge": ["\x00"]},
        {"budget": None},
        {},
        [],
    ],
)
def test_hostile_draw_bodies_are_problems(api_as, batch, body):
    response = api_as("admin").post(f"/batches/{batch.pk}/review/draw", body)
    assert response.status_code in (400, 422), response.content[:300]
    assert not ReviewDraw.objects.exists()


def test_drawn_items_are_handed_out_before_items_closest_to_completion(batch):
    """The first three items have two of their three labels: before, the queue gave them out first, and a
    worker labelled none of the drawn items."""
    from annotator.rating.services.annotations import annotation_submit
    from annotator.rating.services.assignment import item_next_for_annotator

    draw = review_draw_make(batch=batch, budget=8, seed=3)
    drawn = {r.item.item_id for r in draw.rows.select_related("item") if r.drawn and not r.labelled_before}
    worker = make_user("next")
    handed = []
    for _ in range(len(drawn)):
        lease = item_next_for_annotator(batch=batch, annotator=worker)
        handed.append(lease.item.item_id)
        annotation_submit(
            item=lease.item, annotator=worker, scores=dict.fromkeys(DIMS, 3), constraints_met=[]
        )
    assert set(handed) == drawn
    almost_done = item_next_for_annotator(batch=batch, annotator=worker).item  # then the rest, as before
    assert almost_done.n_annotations == 2
    review_draw_retire(batch=batch)
    assert not batch.items.filter(queue_first__gt=0).exists()


def test_the_printed_count_is_the_reports_and_the_forecast_comes_first(client, batch, tmp_path):
    import io

    err = io.StringIO()
    call_command(
        "select_for_review",
        "draw",
        "--draw",
        "8",
        "--seed",
        "3",
        "--out",
        str(tmp_path / "d.csv"),
        stderr=err,
    )
    text = err.getvalue()
    forecast, done = text.index("routing is expected to"), text.index("Draw #")
    assert forecast < done and "if the judges' uncertainty tracks their error" in text
    assert "(bound: " in text and "0.5 × budget / candidates" in text
    drew = int(text.split("drew ")[1].split(" ")[0])
    _login(client, make_user("r", role="researcher"))
    report = _report_json(client, batch)["coherence"]["ppi"]["draw"]
    assert drew == report["n_drawn"]  # the items labelled before the draw are not counted as drawn
    assert f"{N_BEFORE} items labelled before the draw join the estimate" in text
    assert report["n_labelled_before"] == N_BEFORE
