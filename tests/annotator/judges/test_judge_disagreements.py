"""The "why it disagrees" page: items where judge and people differ most, reason beside comments."""

import pytest
from django.urls import reverse

from annotator.models import Annotation, JudgeScore
from tests.annotator.judges.test_judges_selector import _add_scores, _study
from tests.factories import PASSWORD


@pytest.fixture
def judged(db):
    batch, _, human = _study(n_items=8, systems=("sys-a", "sys-b"))
    mean = {i: sum(r.values()) / len(r) for i, r in human.items()}
    values = dict(mean)
    far = min(mean)
    values[far] = 5.0 if mean[far] < 3 else 1.0  # one item far from people
    judge = _add_scores("j", batch, values)
    _add_scores("j", batch, mean, dimension="fluency")
    JudgeScore.objects.filter(judge=judge, item__item_id=far, dimension="coherence").update(
        reason="<b>Too short</b>"
    )
    Annotation.objects.filter(item__item_id=far, annotator__username="u0").update(
        comment="<i>misses the toll</i>"
    )
    return batch, judge, far, mean


def _get(client, user, batch, judge, **params):
    assert client.login(username=user.username, password=PASSWORD)
    return client.get(reverse("judge_disagreements", args=[batch.pk, judge.pk]), params)


def test_largest_difference_first_with_reason_and_comments_escaped(client, researcher_user, judged):
    batch, judge, far, mean = judged
    response = _get(client, researcher_user, batch, judge)
    page = response.content.decode()
    rows = response.context["rows"]
    assert rows[0].item_id == far and rows[0].dimension == "coherence"
    assert abs(rows[0].difference) == pytest.approx(
        abs(JudgeScore.objects.get(judge=judge, item__item_id=far, dimension="coherence").value - mean[far])
    )
    assert [abs(r.difference) for r in rows] == sorted((abs(r.difference) for r in rows), reverse=True)
    assert len(rows) == 16  # 8 items × 2 dimensions
    assert {h.annotator for h in rows[0].humans} == {"u0", "u1", "u2"}
    assert "&lt;b&gt;Too short&lt;/b&gt;" in page and "&lt;i&gt;misses the toll&lt;/i&gt;" in page
    assert "<b>Too short</b>" not in page


def test_filters_by_dimension_and_system(client, researcher_user, judged):
    batch, judge, _, _ = judged
    rows = _get(client, researcher_user, batch, judge, dimension="fluency", system="sys-b").context["rows"]
    assert rows and all(r.dimension == "fluency" and r.system_id == "sys-b" for r in rows)
    assert all(r.difference == pytest.approx(0) for r in rows)


def test_unknown_filter_is_a_clear_400_not_a_500(client, researcher_user, judged):
    batch, judge, _, _ = judged
    response = _get(client, researcher_user, batch, judge, dimension="nonsense")
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()


def test_annotators_never_see_it(client, annotator_user, judged):
    batch, judge, _, _ = judged
    assert _get(client, annotator_user, batch, judge).status_code in (302, 403)
