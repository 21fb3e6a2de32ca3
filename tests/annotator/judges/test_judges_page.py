"""The judge import page: researchers and admins only; bad files list every row and save nothing."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.models import JudgeScore, PairwiseVerdict
from tests.factories import PASSWORD, make_batch


def _login(client, user):
    assert client.login(username=user.username, password=PASSWORD)


@pytest.mark.django_db
def test_annotators_cannot_open_the_judges_page(client, annotator_user):
    _login(client, annotator_user)
    assert client.get(reverse("judges")).status_code == 403
    response = client.post(reverse("judge_import_scores"), {})
    assert response.status_code == 403


@pytest.mark.django_db
def test_researcher_imports_scores(client, researcher_user):
    make_batch("b", n_items=2)
    _login(client, researcher_user)
    assert client.get(reverse("judges")).status_code == 200
    upload = SimpleUploadedFile("s.csv", b"item_id,dimension,score\nb-0,coherence,0.5\nb-1,overall,1\n")
    response = client.post(
        reverse("judge_import_scores"),
        {"batch": "b", "judge": "gpt", "scale": "0-1", "file": upload},
        follow=True,
    )
    assert response.status_code == 200
    assert "Imported 2 scores" in response.content.decode()
    assert sorted(JudgeScore.objects.values_list("value", flat=True)) == [3.0, 5.0]
    assert "<td>gpt</td>" in response.content.decode()


@pytest.mark.django_db
def test_bad_file_lists_rows_escaped_and_saves_nothing(client, admin_user):
    make_batch("b", n_items=1)
    _login(client, admin_user)
    upload = SimpleUploadedFile(
        "s.csv", b"item_id,dimension,score\n<script>x</script>,coherence,0.5\nb-0,coherence,7\n"
    )
    response = client.post(
        reverse("judge_import_scores"),
        {"batch": "b", "judge": "gpt", "scale": "1-5", "file": upload},
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "Nothing was saved" in page
    assert "row 2, column `item_id`: `&lt;script&gt;x&lt;/script&gt;` is not an item of this batch" in page
    assert "row 3, column `score`: score 7 is outside the declared scale 1–5" in page
    assert "<script>x" not in page
    assert JudgeScore.objects.count() == 0


@pytest.mark.django_db
def test_verdicts_import(client, researcher_user):
    make_batch("p", n_items=2, systems=("base", "new"))
    _login(client, researcher_user)
    upload = SimpleUploadedFile("v.csv", b"prompt_id,winner,confidence\np0,baseline,0.7\n")
    response = client.post(
        reverse("judge_import_verdicts"),
        {"batch": "p", "judge": "pw", "baseline_system": "base", "file": upload},
    )
    assert response.status_code == 302
    assert PairwiseVerdict.objects.get().winner == "baseline"


@pytest.mark.django_db
def test_annotators_never_see_judge_scores(client, annotator_user):
    from annotator.models import Judge, JudgeFailure

    batch = make_batch("blind", n_items=2)
    judge = Judge.objects.create(name="JUDGE-NAME-secret", model="JUDGE-MODEL")
    for item in batch.items.all():
        JudgeScore.objects.create(
            judge=judge,
            item=item,
            dimension="coherence",
            raw_value=0.9,
            scale_min=0,
            scale_max=1,
            value=4.6,
            reason="JUDGE-REASON-secret",
            raw_output="JUDGE-RAW-secret",
        )
        JudgeFailure.objects.create(
            judge=judge, item=item, error="JUDGE-ERROR-secret", raw_output="JUDGE-RAW-secret"
        )
    _login(client, annotator_user)
    for url in (reverse("home"), reverse("annotate_queue"), reverse("annotate_next", args=[batch.pk])):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        # The score as a number of its own: timestamps (a lease's "…34.678…") may hold "4.6" inside.
        assert "JUDGE-" not in html and not re.search(r"(?<![\d.])4\.60*(?![\d])", html), url
    assert client.get(reverse("report_batch", args=[batch.pk])).status_code == 403


def test_the_run_form_starts_on_a_scoring_template_not_a_pairwise_one(client, researcher_user):
    """A browser shows the first option when none is selected; geval_pairwise sorts first, and a
    run started with it and Pairwise unticked is refused."""
    _login(client, researcher_user)
    html = client.get(reverse("judges")).content.decode()
    select = re.search(r'<select name="template".*?</select>', html, re.S).group(0)
    selected = re.findall(r'<option value="([^"]+)" selected>', select)
    assert selected == ["hcs_rubric"], select
