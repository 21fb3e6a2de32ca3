"""The management commands: import_batch, import_annotations, create_demo_users, load_demo."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotator.models import Annotation, Batch, Item, JudgeScore, Score
from hcs.rubric import Rubric

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def items_csv(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text(
        "item_id,prompt,response,system_id\n1,Avoid tolls to the airport,Route 9,a\n2,Avoid tolls to the airport,I-90,b\n"
    )
    return path


def test_import_batch(items_csv):
    assert "Batch “demo”: 2 items, k = 4." in run(
        "import_batch", str(items_csv), "--name", "demo", "--k", "4"
    )
    assert Batch.objects.get(name="demo").items.count() == 2


def test_import_batch_refusals_print_every_problem_and_save_nothing(items_csv, tmp_path):
    with pytest.raises(CommandError, match="k = 2 is too small"):
        run("import_batch", str(items_csv), "--name", "x", "--k", "2")
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,prompt,response\n1,p,\n1,p,r\n")
    with pytest.raises(CommandError) as error:
        run("import_batch", str(bad), "--name", "x")
    assert "nothing was saved; 2 problems" in str(error.value)
    assert "row 2, column `response`: is empty" in str(error.value)
    assert "row 3, column `item_id`: `1` is already used on row 2" in str(error.value)
    run("import_batch", str(items_csv), "--name", "taken")
    with pytest.raises(CommandError, match="already exists"):
        run("import_batch", str(items_csv), "--name", "taken")
    with pytest.raises(CommandError, match="no such file"):
        run("import_batch", str(tmp_path / "missing.csv"), "--name", "y")
    assert Batch.objects.count() == 1 and Item.objects.count() == 2


def test_import_batch_refuses_wrong_encoding_and_oversized_files(tmp_path, settings):
    latin = tmp_path / "latin.csv"
    latin.write_bytes("item_id,prompt,response\n1,Café,r\n".encode("latin-1"))
    with pytest.raises(CommandError, match="not UTF-8"):
        run("import_batch", str(latin), "--name", "x")
    settings.ANNOTATOR_UPLOAD_MAX_BYTES = 10
    ok = tmp_path / "ok.csv"
    ok.write_text("item_id,prompt,response\n1,p,r\n")
    with pytest.raises(CommandError, match="largest file accepted is 10 bytes"):
        run("import_batch", str(ok), "--name", "x")
    assert Batch.objects.count() == 0


def test_rubric_option(items_csv, tmp_path):
    data = Rubric.default().to_dict()
    data.update(name="mini", title="Mini rubric", rules=[], flags=[], exclusive_flags=[])
    data["dimensions"] = [dict(data["dimensions"][0], weight=1.0)]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(data))
    run("import_batch", str(items_csv), "--name", "mini", "--rubric", str(path))
    assert Batch.objects.get(name="mini").rubric_obj.dimension_keys == ("coherence",)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(CommandError, match="--rubric: rubric file .* is not valid JSON"):
        run("import_batch", str(items_csv), "--name", "other", "--rubric", str(broken))


def test_import_annotations_with_the_template():
    out = run("import_annotations", str(ROOT / "templates" / "annotation_template.csv"), "--batch", "offline")
    assert (
        "Batch “offline” (created): 2 annotations by 1 annotator; 2 new items; 1 new annotator account."
        in out
    )
    assert Annotation.objects.count() == 2 and Score.objects.count() == 10
    with pytest.raises(CommandError, match="already has an annotation"):
        run("import_annotations", str(ROOT / "templates" / "annotation_template.csv"), "--batch", "offline")
    assert Annotation.objects.count() == 2


def test_import_annotations_refuses_k_two(tmp_path):
    with pytest.raises(CommandError, match="k = 2 is too small"):
        run(
            "import_annotations",
            str(ROOT / "templates" / "annotation_template.csv"),
            "--batch",
            "b",
            "--k",
            "2",
        )
    assert Batch.objects.count() == 0


def test_create_demo_users_is_idempotent_and_prints_credentials():
    out = run("create_demo_users")
    User = get_user_model()
    names = ["admin", "researcher", *[f"annotator{i}" for i in range(1, 6)]]
    assert set(User.objects.values_list("username", flat=True)) == set(names)
    for name in names:
        assert f"{name}-demo-pass" in out
        assert User.objects.get(username=name).check_password(f"{name}-demo-pass")
    admin = User.objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser
    assert list(User.objects.get(username="researcher").groups.values_list("name", flat=True)) == [
        "researcher"
    ]
    assert list(User.objects.get(username="annotator3").groups.values_list("name", flat=True)) == [
        "annotator"
    ]
    run("create_demo_users")
    assert User.objects.count() == len(names)


def test_load_demo_is_realistic_and_idempotent():
    out = run("load_demo")
    batch = Batch.objects.get(name="Demo: route planning")
    items = list(batch.items.all())
    assert len(items) >= 30 and "Created batch" in out
    assert len({i.system_id for i in items}) >= 3
    assert all(i.constraints for i in items if i.prompt_id != "ambiguous-downtown")
    assert sum(1 for i in items if len(i.conversation) > 1) >= 6
    assert sum(1 for i in items if i.context) >= 20 and sum(1 for i in items if i.expected_output) >= 10
    # Every system gets responses for the same prompts, so outputs can be compared per prompt.
    assert all(
        len({i.system_id for i in items if i.prompt_id == p}) == 3 for p in {i.prompt_id for i in items}
    )
    annotations = Annotation.objects.filter(item__batch=batch)
    assert annotations.count() > 0
    # the constructed demo judge scores every item, so the report has a judge card to show
    assert (
        JudgeScore.objects.filter(item__batch=batch, judge__name="demo-judge (constructed)").count()
        == len(items) * 5
    )
    rubric = batch.rubric_obj
    for a in annotations.prefetch_related("scores"):
        assert rubric.validate({s.dimension: s.value for s in a.scores.all()}, a.flags) == []
    for item in items:
        assert item.n_annotations == item.annotations.count() <= batch.k
    assert batch.items.filter(n_annotations=0).count() >= 20, "most items wait to be rated"
    # Quality control shows without extra steps: training first, then checks in the queue.
    assert (
        batch.gold_items.filter(kind="training").count() == 2
        and batch.gold_items.filter(kind="check").count() == 3
    )
    assert batch.quality_rule.training_items == 2 and "2 training items" in out
    before = (
        Item.objects.count(),
        Annotation.objects.count(),
        Score.objects.count(),
        JudgeScore.objects.count(),
    )
    assert "already exists" in run("load_demo")
    assert (
        Item.objects.count(),
        Annotation.objects.count(),
        Score.objects.count(),
        JudgeScore.objects.count(),
    ) == before


def test_the_demo_prints_a_working_study_link_and_invite_link():
    from urllib.parse import urlsplit

    from django.test import Client

    from annotator.models import InviteLink, StudyLink

    run("load_demo")
    batch = Batch.objects.get(name="Demo: route planning")
    assert batch.consent_text.startswith("## Consent")
    out = run("create_demo_users")
    urls = [line.strip() for line in out.splitlines() if line.strip().startswith("http")]
    template, try_it, one_worker, invite = urls
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in template and "/invite/" in invite
    assert urlsplit(try_it).path.endswith(
        "/new-worker/"
    )  # opened: tests/annotator/studies/test_demo_links.py
    response = Client().get(urlsplit(one_worker).path + "?" + urlsplit(one_worker).query)
    assert response.status_code == 302 and response["Location"] == f"/annotate/{batch.pk}/next/"
    assert Client().get(urlsplit(invite).path).status_code == 200
    # A second run revokes the first run's demo links and prints new ones.
    run("create_demo_users")
    assert StudyLink.objects.filter(revoked_at__isnull=True).count() == 1
    assert InviteLink.objects.filter(revoked_at__isnull=True).count() == 1
    assert Client().get(urlsplit(invite).path).status_code == 403


def test_every_demo_judge_names_its_template_in_the_exports(tmp_path):
    import csv

    from annotator.judges.engine.templates import load_template
    from annotator.models import Judge
    from annotator.streams.demo import DEMO_JUDGE

    run("load_demo")
    out = tmp_path / "judge_scores.csv"
    call_command(
        "export_report",
        "Demo: route planning",
        "--table",
        "judge_scores",
        "--out",
        str(out),
        stderr=StringIO(),
    )
    versions = {}
    for row in csv.DictReader(out.open(encoding="utf-8")):
        versions.setdefault(row["judge"], set()).add((row["judge_version"], row["template_hash"]))
    template = load_template("hcs_rubric")
    assert len(versions) == 4 and "demo-judge-lenient" in versions
    for judge, seen in versions.items():
        [(version, template_hash)] = seen
        assert version.startswith(f"{template.version} #") and template_hash == template.content_hash, judge
    # The lenient judge's second version is named as a run names one: after the version its rows carry.
    [second] = [j for j in versions if j.startswith("demo-judge-lenient (template ")]
    [(second_version, _)] = versions[second]
    assert second == f"demo-judge-lenient (template {second_version})"
    # A demo loaded before the template was recorded gets it on the next run, and its second version,
    # named then after its score file, is renamed rather than loaded twice.
    import hashlib

    earlier = f"demo-judge-lenient (template 2 #{hashlib.sha256((ROOT / 'fixtures/demo/judge_close.csv').read_bytes()).hexdigest()[:8]})"
    Judge.objects.filter(name__startswith="demo-judge-lenient").update(template_version="", template_hash="")
    Judge.objects.filter(name=second).update(name=earlier)
    scores = JudgeScore.objects.count()
    run("load_demo")
    for name in ("demo-judge-lenient", second):
        judge = Judge.objects.get(name=name)
        assert (judge.template_version, judge.template_hash) == (template.version, template.content_hash)
    # The four of the demo batch, and the demo stream's online judge (its pushed scores of the sampled traces).
    assert JudgeScore.objects.count() == scores
    assert (
        Judge.objects.exclude(name=DEMO_JUDGE).count() == 4 and Judge.objects.filter(name=DEMO_JUDGE).exists()
    )
