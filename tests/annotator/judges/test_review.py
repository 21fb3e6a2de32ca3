"""Items for review where the judges are unsure: the ranking, the command, the queue step."""

import csv

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotator.judges.selectors.review import ReviewError, review_candidates
from annotator.judges.services.review import items_queue_first
from annotator.models import Item, Judge, JudgeCall, JudgeScore
from tests.factories import make_annotation, make_batch, make_user, queue_places

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def _score(judge, item, dimension, value):
    JudgeScore.objects.create(
        judge=judge, item=item, dimension=dimension, raw_value=value, scale_min=1, scale_max=5, value=value
    )


def _call(judge, item, sample, scores):
    JudgeCall.objects.create(
        judge=judge,
        item=item,
        sample=sample,
        status=JudgeCall.OK,
        template_name="t",
        template_hash="h",
        model="m",
        parsed={"scores": scores},
    )


@pytest.fixture
def batch(db):
    """10 items. Items 0-1 are annotated; two judges score coherence. Item 5: the judges disagree by 4;
    item 6: judge a's samples vary; item 7: judge a states confidence 0.2; item 8: safety 2.1 near the cap
    at 2; the rest: the judges agree exactly and safety is 5."""
    batch = make_batch("=rev", n_items=10, systems=("sys-a", "sys-b"))
    items = list(batch.items.order_by("position"))
    a, b = Judge.objects.create(name="a"), Judge.objects.create(name="b")
    person = make_user("person")
    for n, item in enumerate(items):
        if n < 2:
            make_annotation(item, person, dict.fromkeys(DIMS, 3))
        _score(a, item, "coherence", 3.0)
        _score(b, item, "coherence", 5.0 if n in (0, 5) else 3.0)
        _score(a, item, "safety_compliance", 2.1 if n == 8 else 5.0)
    for sample, value in enumerate((1.0, 3.0, 5.0)):
        _call(a, items[6], sample, {"coherence": {"value": value}})
    _call(a, items[7], 0, {"coherence": {"value": 3.0, "confidence": 0.2}})
    return batch


def test_ranking_reasons_and_only_unlabelled_items(batch):
    rows = review_candidates(batch=batch, n=20)
    ids = [r.item_id for r in rows]
    assert "=rev-0" not in ids and "=rev-1" not in ids and len(rows) == 8  # annotated items are out
    assert ids[:4] == ["=rev-6", "=rev-7", "=rev-5", "=rev-8"]
    assert (
        rows[0].uncertainty == pytest.approx(2.0)
        and rows[0].reason == "coherence (a): samples vary (SD 2.00)"
    )
    assert (
        rows[1].uncertainty == pytest.approx(0.8 * 2)
        and rows[1].reason == "coherence (a): low confidence (0.20)"
    )
    assert rows[2].uncertainty == pytest.approx(np.std([3, 5], ddof=1)) and rows[2].reason.startswith(
        "coherence: judges"
    )
    assert rows[3].uncertainty == pytest.approx(0.5 * 0.9) and "near a cap (score 2.10)" in rows[3].reason
    assert all(r.uncertainty == 0 for r in rows[4:])  # two judges in exact agreement: known to be sure
    assert [r.item_id for r in review_candidates(batch=batch, n=2)] == ["=rev-6", "=rev-7"]
    assert rows[0].system_id == Item.objects.get(item_id="=rev-6").system_id


def test_an_item_rated_only_by_an_excluded_annotator_is_still_unlabelled(batch):
    """The report and its PPI++ panel leave an excluded annotator's ratings out, so the item they rated
    counts as unlabelled there; routing must offer it to people too."""
    from annotator.quality.services.exclusion import annotator_exclude

    before = {r.item_id for r in review_candidates(batch=batch, n=20)}
    assert "=rev-0" not in before
    person = Item.objects.get(item_id="=rev-0").annotations.get().annotator
    annotator_exclude(batch=batch, annotator=person, reason="rated without reading")
    rows = review_candidates(batch=batch, n=20)
    assert {r.item_id for r in rows} == before | {"=rev-0", "=rev-1"}
    # item 0's judges disagree by 2 points: it now ranks with item 5, from the same signal
    assert next(r for r in rows if r.item_id == "=rev-0").uncertainty == pytest.approx(np.std([3, 5], ddof=1))


def test_one_judge_without_signals_comes_last_with_no_number(batch):
    rows = review_candidates(batch=batch, n=20, judges=["b"])
    assert all(r.uncertainty is None for r in rows) and rows[0].reason.startswith("no uncertainty signal")
    with_a = review_candidates(batch=batch, n=20, judges=["a"])
    assert with_a[0].item_id == "=rev-6" and with_a[-1].uncertainty == 0  # safety far from a cap: 0


@pytest.mark.parametrize(
    "n,judges,message",
    [
        ("0", None, "between 1 and"),
        ("ten", None, "whole number"),
        ("5", ["nobody"], "'nobody'"),
    ],
)
def test_bad_requests_say_what_to_change(batch, n, judges, message):
    with pytest.raises(ReviewError, match=message):
        review_candidates(batch=batch, n=n, judges=judges)


def test_command_writes_the_csv_defused_and_puts_items_first(batch, tmp_path):
    out = tmp_path / "review.csv"
    call_command("select_for_review", batch.name, "--n", "3", "--out", str(out), "--queue-first")
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["item_id", "system_id", "uncertainty", "reason"]
    assert [r[0] for r in rows[1:]] == ["'=rev-6", "'=rev-7", "'=rev-5"]  # a formula-looking id is defused
    assert float(rows[1][2]) == pytest.approx(2.0)
    positions = queue_places(batch)
    assert list(positions)[:3] == ["=rev-6", "=rev-7", "=rev-5"] and list(positions.values())[:3] == [0, 1, 2]
    assert list(positions)[3:] == [
        "=rev-0",
        "=rev-1",
        "=rev-2",
        "=rev-3",
        "=rev-4",
        "=rev-8",
        "=rev-9",
    ]  # order kept


def test_command_errors_change_nothing(batch, tmp_path):
    out = tmp_path / "x.csv"
    before = queue_places(batch)
    with pytest.raises(CommandError, match="No batch named 'nope'"):
        call_command("select_for_review", "nope", "--n", "3", "--out", str(out))
    with pytest.raises(CommandError, match="'zed'"):
        call_command(
            "select_for_review", batch.name, "--n", "3", "--judge", "zed", "--out", str(out), "--queue-first"
        )
    with pytest.raises(CommandError, match="Cannot write"):
        call_command(
            "select_for_review",
            batch.name,
            "--n",
            "3",
            "--out",
            str(tmp_path / "no" / "x.csv"),
            "--queue-first",
        )
    assert not out.exists()
    assert queue_places(batch) == before


def test_queue_first_refuses_unknown_ids(batch):
    with pytest.raises(ValueError, match="not in batch"):
        items_queue_first(batch=batch, item_ids=["=rev-5", "ghost"])
    assert queue_places(batch)["=rev-5"] == 5


def _login(client, user):
    from tests.factories import PASSWORD

    assert client.login(username=user.username, password=PASSWORD)


def test_page_lists_csv_and_queue_first(client, researcher_user, admin_user, batch):
    from django.urls import reverse

    _login(client, researcher_user)
    url = reverse("review_items", args=[batch.pk])
    page = client.get(url, {"n": "2"}).content.decode()
    assert "=rev-6" in page and "=rev-7" in page and "=rev-5" not in page
    assert "samples vary (SD 2.00)" in page and "first in this batch" not in page  # reordering is for admins
    text = client.get(url, {"n": "2", "judge": "a", "format": "csv"}).content.decode()
    assert text.splitlines()[0] == "item_id,system_id,uncertainty,reason" and text.splitlines()[1].startswith(
        "'=rev-6,"
    )
    bad = client.get(url, {"n": "lots"})
    assert bad.status_code == 400 and "whole number" in bad.content.decode()
    bad = client.get(url, {"judge": "<script>x</script>"}, HTTP_HX_REQUEST="true")
    assert (
        bad.status_code == 400
        and "&lt;script&gt;" in bad.content.decode()
        and "<script>x" not in bad.content.decode()
    )
    assert client.post(reverse("review_queue_first", args=[batch.pk]), {"n": "2"}).status_code == 403
    client.logout()
    _login(client, admin_user)
    assert "first in this batch" in client.get(url, {"n": "2"}).content.decode()
    response = client.post(reverse("review_queue_first", args=[batch.pk]), {"n": "2"}, follow=True)
    assert "Put 2 items first" in response.content.decode()
    assert list(queue_places(batch))[:2] == ["=rev-6", "=rev-7"]
    response = client.post(reverse("review_queue_first", args=[batch.pk]), {"n": "0"}, follow=True)
    assert "Nothing was moved" in response.content.decode()


def test_api_lists_the_same_rows(client, researcher_user, batch):
    from annotator.judges.api import review as api
    from annotator.judges.selectors import review
    from annotator.services.api_tokens import api_token_create

    assert api.MAX_N == review.MAX_N

    _, key = api_token_create(user=researcher_user, name="t", days=1)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    data = client.get(f"/api/v1/batches/{batch.pk}/review?n=3&judge=a&judge=b", **auth).json()
    assert data == {"items": [r.to_json() for r in review_candidates(batch=batch, n=3)]}
    assert list(data["items"][0]) == ["item_id", "system_id", "uncertainty", "reason"]
    problem = client.get(f"/api/v1/batches/{batch.pk}/review?judge=ghost", **auth)
    assert problem.status_code == 422 and "'ghost'" in problem.json()["detail"]
    assert client.get(f"/api/v1/batches/{batch.pk}/review?n=0", **auth).status_code in (400, 422)
    assert client.get("/api/v1/batches/999999/review", **auth).status_code == 404
