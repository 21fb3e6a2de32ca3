"""The frozen calibration set: marked by a researcher (page, command), run alone (run_judge --calibration-set),
and every judge version read on it side by side on the judge card."""

import hashlib
import json
import random

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from scipy.stats import spearmanr

from annotator.judges.services.calibration_set import (
    CalibrationSetError,
    calibration_set_mark,
    calibration_set_retire,
)
from annotator.models import CalibrationSet, Job, Judge, JudgeCall
from tests.annotator.judges.test_judges_selector import _add_scores, _study
from tests.factories import PASSWORD, make_batch, make_user
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

RULE = "hub_answer_correctness"


@pytest.fixture
def logged_in(client, researcher_user):
    assert client.login(username=researcher_user.username, password=PASSWORD)
    return client


@pytest.mark.django_db
def test_a_seeded_sample_is_reproducible_and_frozen():
    batch = make_batch("cs", n_items=20)
    chosen = calibration_set_mark(batch=batch, sample=8, seed=7, note="stratified later")
    ids = sorted(chosen.items.values_list("item_id", flat=True))
    everything = list(batch.items.order_by("position", "id").values_list("item_id", flat=True))
    assert ids == sorted(
        i.item_id for i in random.Random(7).sample(list(batch.items.order_by("position", "id")), 8)
    )
    assert set(ids) <= set(everything) and len(ids) == 8
    assert chosen.fingerprint == hashlib.sha256("\n".join(ids).encode()).hexdigest()
    assert chosen.how == "random sample of 8, seed 7"
    with pytest.raises(CalibrationSetError, match="already has a frozen calibration set"):
        calibration_set_mark(batch=batch, sample=3)
    assert calibration_set_retire(batch=batch) and not CalibrationSet.objects.exists()
    again = calibration_set_mark(batch=batch, sample=8, seed=7)
    assert again.fingerprint == chosen.fingerprint  # the same seed gives the same items


@pytest.mark.django_db
def test_listed_ids_unknown_ones_are_named_and_nothing_is_saved():
    batch = make_batch("cs", n_items=5)
    with pytest.raises(CalibrationSetError, match=r"2 item ids are not in batch .*“nope”, “cs-9”"):
        calibration_set_mark(batch=batch, item_ids=["cs-1", "nope", "cs-9"])
    assert not CalibrationSet.objects.exists()
    with pytest.raises(CalibrationSetError, match="between 1 and 5"):
        calibration_set_mark(batch=batch, sample=6)
    with pytest.raises(CalibrationSetError, match="either the item ids or a sample size"):
        calibration_set_mark(batch=batch)
    chosen = calibration_set_mark(batch=batch, item_ids=["cs-3", " cs-1 ", "cs-3"])
    assert sorted(chosen.items.values_list("item_id", flat=True)) == ["cs-1", "cs-3"]


@pytest.mark.django_db
def test_the_page_marks_shows_and_retires_and_annotators_are_kept_out(logged_in, client, annotator_user):
    batch = make_batch("cs", n_items=12)
    url = reverse("calibration_set", args=[batch.pk])
    page = logged_in.get(url)
    assert page.status_code == 200 and "Freeze the calibration set" in page.content.decode()
    bad = logged_in.post(url, {"sample": "", "item_ids": ""})
    assert (
        bad.status_code == 400 and "Give either a sample size or a list of item ids." in bad.content.decode()
    )
    unknown = logged_in.post(url, {"item_ids": "cs-1\n<b>x</b>"})
    assert unknown.status_code == 400 and "&lt;b&gt;x&lt;/b&gt;" in unknown.content.decode()
    assert not CalibrationSet.objects.exists()
    done = logged_in.post(url, {"item_ids": "cs-1, cs-2\ncs-5", "note": "hard cases"}, follow=True)
    text = done.content.decode()
    assert (
        "Froze a calibration set of 3 items." in text and "cs-1, cs-2, cs-5" in text and "hard cases" in text
    )
    assert "Fewer than 50 items" in text
    second = logged_in.post(url, {"sample": "2"})  # another tab marks again: refused, and said so
    assert second.status_code == 400 and "already has a frozen calibration set" in second.content.decode()
    logged_in.post(reverse("calibration_set_retire", args=[batch.pk]))
    assert not CalibrationSet.objects.exists()
    logged_in.logout()
    assert client.login(username=annotator_user.username, password=PASSWORD)
    assert client.get(url).status_code in (302, 403)
    assert client.post(url, {"sample": "3"}).status_code in (302, 403)
    assert not CalibrationSet.objects.exists()


@pytest.mark.django_db
def test_command_marks_shows_and_retires(tmp_path, capsys):
    batch = make_batch("cmd", n_items=6)
    listing = tmp_path / "ids.csv"
    listing.write_text("item_id,why\ncmd-0,first\ncmd-4,last\n")
    call_command("calibration_set", "cmd", "--items", str(listing), "--note", "two")
    assert sorted(CalibrationSet.objects.get().items.values_list("item_id", flat=True)) == ["cmd-0", "cmd-4"]
    call_command("calibration_set", "cmd", "--show")
    assert "cmd-0\ncmd-4" in capsys.readouterr().out
    with pytest.raises(CommandError, match="already has a frozen calibration set"):
        call_command("calibration_set", "cmd", "--sample", "2")
    call_command("calibration_set", "cmd", "--retire")
    with pytest.raises(CommandError, match="has no calibration set"):
        call_command("calibration_set", "cmd", "--show")
    assert batch.items.count() == 6


@pytest.mark.django_db
def test_run_judge_calls_only_the_set_and_a_new_model_or_temperature_is_a_new_version(capsys):
    batch = make_batch("run", n_items=10)
    with FakeJudge() as fake, pytest.raises(CommandError, match="has no calibration set: mark one first"):
        run_judge(fake, "run", "--calibration-set", model="m1")
    assert fake.calls == 0
    calibration_set_mark(batch=batch, item_ids=["run-2", "run-5", "run-7"])
    with FakeJudge() as fake:
        run_judge(fake, "run", "--judge", "j", "--calibration-set", model="m1")
        assert fake.calls == 3
        run_judge(fake, "run", "--judge", "j", "--calibration-set", model="m1")  # a rerun calls nothing again
        assert fake.calls == 3
        run_judge(fake, "run", "--judge", "j", "--calibration-set", model="m2")
        run_judge(fake, "run", "--judge", "j", "--calibration-set", "--temperature", "0.5", model="m1")
        assert fake.calls == 9
        # the same changed configuration (at the same endpoint) again goes to the same version
        run_judge(fake, "run", "--judge", "j", "--calibration-set", "--force", model="m2")
    out = capsys.readouterr().out
    assert "another model (m1 before, m2 now)" in out and "other parameters" in out
    called = set(JudgeCall.objects.values_list("item__item_id", flat=True))
    assert called == {"run-2", "run-5", "run-7"}
    names = list(Judge.objects.order_by("created_at", "id").values_list("name", "model"))
    assert names[0] == ("j", "m1") and len(names) == 3
    assert (
        all(n.startswith("j (template 1 #") for n, _ in names[1:])
        and names[1][1] == "m2"
        and names[2][1] == "m1"
    )
    assert len({n for n, _ in names}) == 3
    with FakeJudge() as elsewhere:  # the base URL is part of the judge: another endpoint is another version
        run_judge(elsewhere, "run", "--judge", "j", "--calibration-set", "--force", model="m2")
    assert Judge.objects.count() == 4


@pytest.mark.django_db
def test_card_puts_versions_side_by_side_on_the_set_against_scipy(logged_in):
    batch, _, human = _study(n_items=40)
    mean = {i: float(np.mean(list(r.values()))) for i, r in human.items()}
    noise = np.random.default_rng(3)
    v1 = _add_scores(
        "rubric/m", batch, {i: float(np.clip(v + noise.normal(0, 1.5), 1, 5)) for i, v in mean.items()}
    )
    v2 = _add_scores("rubric/m (template 2 #abcdef12)", batch, mean)
    Judge.objects.filter(pk=v2.pk).update(created_at=v1.created_at.replace(year=v1.created_at.year + 1))
    in_set = [f"judged-{n}" for n in range(0, 40, 2)]
    calibration_set_mark(batch=batch, item_ids=in_set)
    card = json.loads(logged_in.get(reverse("judge_card_export", args=[batch.pk, v1.pk, "json"])).content)
    cs = card["calibration_set"]
    assert cs["n_items"] == 20 and cs["fingerprint"] == CalibrationSet.objects.get().fingerprint
    assert [v["name"] for v in cs["versions"]] == ["rubric/m", "rubric/m (template 2 #abcdef12)"]
    assert [v["current"] for v in cs["versions"]] == [True, False]
    values = {j.pk: dict(j.scores.values_list("item__item_id", "value")) for j in (v1, v2)}
    for version, judge in zip(cs["versions"], (v1, v2)):
        coherence = version["dimensions"]["coherence"]
        expected = spearmanr([values[judge.pk][i] for i in in_set], [mean[i] for i in in_set]).statistic
        assert coherence["n"] == 20 and version["items_scored"] == 20
        assert coherence["spearman"] == pytest.approx(expected)
        low, high = coherence["spearman_ci95"]
        assert low <= coherence["spearman"] <= high
    assert cs["versions"][1]["dimensions"]["coherence"]["spearman"] == pytest.approx(1.0)
    page = logged_in.get(reverse("judge_card", args=[batch.pk, v2.pk])).content.decode()
    assert (
        "Versions on the calibration set" in page
        and "20 / 20" in page
        and 'alt="Spearman correlation' in page
    )
    html = logged_in.get(reverse("judge_card_export", args=[batch.pk, v2.pk, "html"])).content.decode()
    assert "Versions on the calibration set" in html and "data:image/svg+xml" in html
    listing = logged_in.get(reverse("calibration_set", args=[batch.pk])).content.decode()
    assert (
        f'{reverse("judge_card", args=[batch.pk, v2.pk])}#calibration-set">rubric/m</a>: its 2 versions'
        in listing
    )
    assert listing.count('#calibration-set">') == 1  # one row for the judge and its versions


@pytest.mark.django_db
def test_card_without_a_set_says_how_to_mark_one(logged_in):
    batch, _, human = _study(n_items=6)
    judge = _add_scores("j", batch, {i: 3.0 for i in human})
    page = logged_in.get(reverse("judge_card", args=[batch.pk, judge.pk])).content.decode()
    assert "This batch has no calibration set" in page and reverse("calibration_set", args=[batch.pk]) in page
    card = json.loads(logged_in.get(reverse("judge_card_export", args=[batch.pk, judge.pk, "json"])).content)
    assert card["calibration_set"] is None


@pytest.mark.django_db
def test_a_run_from_the_judges_page_can_take_only_the_set(
    client, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-web-123456789")
    batch = make_batch("web", n_items=6)
    client.force_login(make_user("res", role="researcher"))
    form = {
        "batch": "web",
        "template": RULE,
        "base_url": "http://127.0.0.1:9",
        "model": "fake-1",
        "key_env": "OPENAI_API_KEY",
        "concurrency": "2",
        "calibration_set": "on",
    }
    refused = client.post("/judges/run/", form)
    assert refused.status_code == 400 and "has no calibration set yet" in refused.content.decode()
    assert not Job.objects.exists()
    calibration_set_mark(batch=batch, item_ids=["web-1", "web-4"])
    with FakeJudge() as fake, django_capture_on_commit_callbacks(execute=True):
        client.post("/judges/run/", {**form, "base_url": fake.url})
    job = Job.objects.get()
    assert job.state == Job.DONE and job.label.endswith("(calibration set)") and fake.calls == 2
    assert set(JudgeCall.objects.values_list("item__item_id", flat=True)) == {"web-1", "web-4"}
