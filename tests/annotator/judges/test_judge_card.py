"""The judge card (page, self-contained HTML, JSON) and the methods paragraph of the report."""

import json

import pytest
from django.urls import reverse

from annotator.models import Judge
from annotator.reports.exports.methods import methods_paragraph
from annotator.reports.selectors.batch_report import batch_report
from tests.annotator.judges.test_judge_probes_report import verbose_judge  # noqa: F401 (fixture)
from tests.annotator.judges.test_judges_selector import _add_scores, _study
from tests.factories import PASSWORD


@pytest.fixture
def logged_in(client, researcher_user):
    assert client.login(username=researcher_user.username, password=PASSWORD)
    return client


def test_card_json_holds_calibration_alt_test_warnings_probes_versions_and_methods(logged_in, verbose_judge):  # noqa: F811
    batch, *_ = verbose_judge
    judge = Judge.objects.get(name="verbose")
    response = logged_in.get(reverse("judge_card_export", args=[batch.pk, judge.pk, "json"]))
    assert response["Content-Disposition"].endswith('-verbose-card.json"')
    card = json.loads(response.content)
    assert card["judge"] == "verbose" and card["k"] == 3
    coherence = card["dimensions"]["coherence"]
    assert isinstance(coherence["spearman"], float) and isinstance(coherence["human_ceiling_spearman"], float)
    assert coherence["alt_test"]["n_items"] == 60 and coherence["alt_test"]["annotators_tested"] == 3
    assert coherence["alt_test_warnings"] == []  # n = 60 ≥ 50, k = 3
    assert coherence["length_bias"]["coef_per_1000_chars"]["value"] == pytest.approx(0.5, abs=1e-6)
    assert coherence["score_use"]["levels_used"] >= 3
    assert [v["name"] for v in card["versions"]] == ["verbose"] and card["versions"][0]["current"]
    assert card["methods"].startswith("3 annotators rated 60 of 60 items (180 annotations)")


def test_card_warns_on_thin_evidence_and_lists_versions(logged_in, db):
    batch, _, human = _study(n_items=36)
    mean = {i: sum(r.values()) / len(r) for i, r in human.items()}
    old = _add_scores("rubric/m", batch, mean)
    new = _add_scores("rubric/m (template 2 #abcdef12)", batch, {i: min(5.0, v + 1) for i, v in mean.items()})
    page = logged_in.get(reverse("judge_card", args=[batch.pk, new.pk])).content.decode()
    assert "only 36 item(s) (n &lt; 50): the verdict is weak evidence" in page
    assert "rubric/m (template 2 #abcdef12) <em>(this card)</em>" in page
    assert (
        f'<a href="{reverse("judge_card", args=[batch.pk, old.pk])}">rubric/m</a></th>' in page
    )  # the other version
    assert "Coherence 0." in page  # labels, not keys
    card = json.loads(logged_in.get(reverse("judge_card_export", args=[batch.pk, old.pk, "json"])).content)
    assert [v["current"] for v in card["versions"]] == [True, False]
    assert card["versions"][0]["spearman"]["coherence"] == pytest.approx(
        card["dimensions"]["coherence"]["spearman"]
    )
    html = logged_in.get(reverse("judge_card_export", args=[batch.pk, old.pk, "html"])).content.decode()
    assert html.startswith("<!doctype html>") and "<style>" in html
    assert "<link" not in html and 'src="http' not in html  # self-contained


def test_card_escapes_names_and_refuses_judges_without_scores(logged_in, db):
    batch, _, human = _study(n_items=6)
    judge = _add_scores("<script>x</script>", batch, {i: 3.0 for i in human})
    page = logged_in.get(reverse("judge_card", args=[batch.pk, judge.pk])).content.decode()
    assert "<script>x</script>" not in page and "&lt;script&gt;" in page
    other = Judge.objects.create(name="elsewhere")
    assert logged_in.get(reverse("judge_card", args=[batch.pk, other.pk])).status_code == 404
    assert logged_in.get(reverse("judge_card_export", args=[batch.pk, judge.pk, "pdf"])).status_code == 404


def test_annotators_never_see_a_judge_card(client, annotator_user, db):
    batch, _, human = _study(n_items=6)
    judge = _add_scores("j", batch, {i: 3.0 for i in human})
    assert client.login(username=annotator_user.username, password=PASSWORD)
    for url in (
        reverse("judge_card", args=[batch.pk, judge.pk]),
        reverse("judge_card_export", args=[batch.pk, judge.pk, "json"]),
    ):
        assert client.get(url).status_code in (302, 403)


def test_methods_paragraph_in_report_page_and_json(logged_in, db):
    batch, _, _ = _study(n_items=12)
    report = batch_report(batch=batch)
    text = methods_paragraph(report)
    row = report.dimensions[0]
    a = row.agreement
    expected = (
        f"{row.label}: κ = {a.fleiss_kappa:.2f} [{a.fleiss_kappa_ci95[0]:.2f}, {a.fleiss_kappa_ci95[1]:.2f}], "
        f"α = {a.alpha_ordinal:.2f} [{a.alpha_ordinal_ci95[0]:.2f}, {a.alpha_ordinal_ci95[1]:.2f}]"
    )
    assert expected in text
    assert "with k = 3 independent annotations planned per item" in text
    assert "No annotator was excluded" in text and "1000 resamples" in text
    data = json.loads(logged_in.get(reverse("report_export", args=[batch.pk, "json"])).content)
    assert data["methods"] == text
    page = logged_in.get(reverse("report_batch", args=[batch.pk])).content.decode()
    assert "Methods paragraph" in page


def test_demo_shows_a_judge_card_with_a_length_bias(logged_in, db):
    from django.core.management import call_command

    call_command("load_demo", stdout=__import__("io").StringIO())
    judge = Judge.objects.get(name="demo-judge (constructed)")
    batch = judge.scores.first().item.batch
    page = logged_in.get(reverse("report_judges", args=[batch.pk])).content.decode()  # loaded after the page
    assert reverse("judge_card", args=[batch.pk, judge.pk]) in page
    card = json.loads(logged_in.get(reverse("judge_card_export", args=[batch.pk, judge.pk, "json"])).content)
    coherence = card["dimensions"]["coherence"]
    assert coherence["length_bias"]["spearman"] > 0  # it adds a point to long answers
    # 12 items: the alt-test cannot run (it needs 30); the card says so, never "fails" (k = 0 is no verdict).
    assert coherence["alt_test"]["passed"] is None and coherence["alt_test_warnings"] == []
    assert coherence["alt_test"]["verdict"].startswith("not testable yet: 12 items")
    page = logged_in.get(reverse("judge_card", args=[batch.pk, judge.pk])).content.decode()
    assert "not testable yet: 12 items" in page and "fails" not in page


def test_methods_paragraph_names_who_was_excluded_and_counts_only_the_rest(db):
    from django.contrib.auth import get_user_model

    from annotator.quality.services.exclusion import annotator_block, annotator_exclude

    batch, _, _ = _study(n_items=12)
    users = get_user_model().objects.filter(username__in=["u0", "u1"]).order_by("username")
    annotator_exclude(batch=batch, annotator=users[0], reason="clicks at random")
    text = methods_paragraph(batch_report(batch=batch, n_resamples=50))
    assert text.startswith("2 annotators rated 12 of 12 items (24 annotations)")
    assert (
        "1 further annotator was excluded (1 by a researcher's decision) and left out of every statistic below."
        in text
    )
    assert "No annotator was excluded" not in text
    annotator_block(batch=batch, annotator=users[1], reason="failed checks")
    text = methods_paragraph(batch_report(batch=batch, n_resamples=50))
    assert text.startswith("1 annotator rated 12 of 12 items (12 annotations)")
    assert (
        "2 further annotators were excluded (1 by a researcher's decision, 1 by the batch's gold-check block rule)"
        in text
    )


def test_methods_paragraph_of_a_batch_nobody_rated_says_so(db):
    from tests.factories import make_batch

    text = methods_paragraph(batch_report(batch=make_batch("empty", n_items=4), n_resamples=50))
    assert text.startswith("No item of this batch (4 items, k = 3") and "undefined" not in text


def test_judges_page_links_each_judge_to_its_card_per_batch(logged_in, db):
    batch, _, human = _study(n_items=6)
    judge = _add_scores("linked", batch, {i: 3.0 for i in human})
    page = logged_in.get(reverse("judges")).content.decode()
    assert f'<a href="{reverse("judge_card", args=[batch.pk, judge.pk])}">{batch.name}</a>' in page


def test_methods_paragraph_ignores_exclusions_of_people_who_rated_nothing(db):
    from annotator.quality.services.exclusion import annotator_exclude
    from tests.factories import make_user

    batch, _, _ = _study(n_items=6)
    annotator_exclude(batch=batch, annotator=make_user("never-rated"), reason="spam account")
    text = methods_paragraph(batch_report(batch=batch, n_resamples=50))
    assert (
        text.startswith("3 annotators rated 6 of 6 items (18 annotations)")
        and "No annotator was excluded" in text
    )


def test_the_readme_counts_the_judges_the_demo_loads(db):
    """The README said three demo judges; load_demo makes four (a second version of one of them)."""
    import io
    import re

    from django.conf import settings
    from django.core.management import call_command

    call_command("load_demo", stdout=io.StringIO())
    loaded = Judge.objects.filter(scores__item__batch__name="Demo: route planning").distinct().count()
    readme = (settings.BASE_DIR / "README.md").read_text(encoding="utf-8")
    said = re.search(r"(\w+) demo\s+LLM judges have scored the items", readme)
    words = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    assert said and words[said.group(1)] == loaded == 4
