"""Importing judge scores and pairwise verdicts: parsing, row-numbered errors, all or nothing."""

import json

import pytest
from django.core.management import CommandError, call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from annotator.judges.imports.judge_file import parse_judge_file
from annotator.judges.imports.verdict_file import parse_verdict_file
from annotator.judges.services.judges import (
    judge_get_or_create,
    judge_scores_import,
    pairwise_verdicts_import,
)
from annotator.models import Judge, JudgeScore, PairwiseVerdict
from annotator.uploads.files.errors import FileRefused, ImportRefused
from hcs.judge_output import JudgeScale
from tests.factories import make_batch

FRUSTRATION = '```json\n{"User frustration": {"score": 0.3, "reason": "The score is 0.3 because the User rephrases once."}}\n```'
GEVAL = json.dumps(
    {
        "coherence": {"score": 4, "reasoning": "Orderly.", "evidence": []},
        "relevance": {"score": 2, "reasoning": "Off track.", "evidence": []},
        "overall": {"baseline_score": 3, "enhanced_score": 4, "winner": "enhanced", "confidence": 0.9},
    }
)


def _import(batch, text, *, scale="0-1", lower=False, filename="scores.csv", judge="gpt-judge"):
    return judge_scores_import(
        batch=batch,
        judge_name=judge,
        data=text.encode(),
        filename=filename,
        scale=JudgeScale.parse(scale, higher_is_better=not lower),
    )


@pytest.mark.django_db
def test_csv_scores_are_mapped_onto_1_to_5():
    batch = make_batch("b", n_items=3)
    count = _import(batch, "item_id,dimension,score,reason\nb-0,coherence,1.0,Clear\nb-1,overall,0.25,\n")
    assert count == 2
    top = JudgeScore.objects.get(item__item_id="b-0")
    assert (top.raw_value, top.value, top.reason, top.dimension) == (1.0, 5.0, "Clear", "coherence")
    assert (top.scale_min, top.scale_max, top.higher_is_better) == (0.0, 1.0, True)
    assert JudgeScore.objects.get(item__item_id="b-1").value == 2.0


@pytest.mark.django_db
def test_jsonl_raw_outputs_are_parsed():
    batch = make_batch("b", n_items=3)
    lines = [
        {"item_id": "b-0", "dimension": "overall", "raw_output": FRUSTRATION},
        {"item_id": "b-1", "dimension": "coherence", "raw_output": GEVAL},
        {"item_id": "b-1", "dimension": "relevance", "raw_output": GEVAL},
    ]
    # The frustration rule's 0–1 scale has its good end low; the G-Eval scores are 1–5: two judges.
    _import(batch, json.dumps(lines[0]), scale="0-1", lower=True, filename="f.jsonl", judge="frustration")
    _import(
        batch, "\n".join(json.dumps(x) for x in lines[1:]), scale="1-5", filename="g.jsonl", judge="geval"
    )
    frustration = JudgeScore.objects.get(judge__name="frustration")
    assert frustration.raw_value == 0.3
    assert frustration.value == pytest.approx(1 + 0.7 * 4)
    assert frustration.reason.startswith("The score is 0.3")
    assert frustration.raw_output == FRUSTRATION
    geval = {s.dimension: s.value for s in JudgeScore.objects.filter(judge__name="geval")}
    assert geval == {"coherence": 4.0, "relevance": 2.0}


@pytest.mark.django_db
def test_every_bad_row_is_reported_and_nothing_saves():
    batch = make_batch("b", n_items=3)
    text = (
        "item_id,dimension,score,raw_output\n"
        "b-0,coherence,0.5,\n"  # fine
        "nope,coherence,0.5,\n"  # unknown item
        "b-1,fluency,1.5,\n"  # out of range
        "b-2,coherence,,I think it is pretty good overall.\n"  # unparseable
        "b-0,coherence,0.7,\n"  # duplicate of row 2
        "b-1,tone,0.5,\n"  # unknown dimension
    )
    with pytest.raises(ImportRefused) as caught:
        _import(batch, text)
    messages = [str(e) for e in caught.value.errors]
    assert "row 3, column `item_id`: `nope` is not an item of this batch" in messages
    assert "row 4, column `score`: score 1.5 is outside the declared scale 0–1" in messages
    assert any(m.startswith("row 5, column `raw_output`: no score could be read") for m in messages)
    assert "row 6, column `dimension`: `b-0` × `coherence` already appears on row 2" in messages
    assert any(m.startswith("row 7, column `dimension`: `tone` is not one of") for m in messages)
    assert JudgeScore.objects.count() == 0
    assert Judge.objects.count() == 0


@pytest.mark.django_db
def test_missing_columns():
    batch = make_batch("b", n_items=1)
    with pytest.raises(ImportRefused, match="give a `score` column or a `raw_output` column"):
        _import(batch, "item_id,dimension,reason\nb-0,coherence,x\n")


@pytest.mark.django_db
def test_reimport_replaces_the_same_judge_item_dimension():
    batch = make_batch("b", n_items=2)
    _import(batch, "item_id,dimension,score\nb-0,coherence,0\nb-1,coherence,1\n")
    _import(batch, "item_id,dimension,score\nb-0,coherence,1\n")
    assert sorted(JudgeScore.objects.values_list("item__item_id", "value")) == [("b-0", 5.0), ("b-1", 5.0)]


@pytest.mark.django_db
def test_judge_configuration_is_not_silently_changed():
    judge_get_or_create(name="j", model="m1")
    with pytest.raises(ImportRefused, match="already has model"):
        judge_get_or_create(name="j", model="m2")
    assert judge_get_or_create(name="j", template="t").template == "t"


@pytest.mark.django_db
def test_command_imports_and_reports_errors(tmp_path, capsys):
    make_batch("cmd", n_items=2)
    good = tmp_path / "good.csv"
    good.write_text("item_id,dimension,score\ncmd-0,coherence,4\ncmd-1,coherence,1\n")
    call_command(
        "import_judge_scores",
        str(good),
        "--batch",
        "cmd",
        "--judge",
        "j",
        "--scale",
        "1-4",
        "--lower-is-better",
    )
    assert "2 scores on 1–4, lower is better" in capsys.readouterr().out
    assert sorted(JudgeScore.objects.values_list("value", flat=True)) == [1.0, 5.0]
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,dimension,score\ncmd-0,coherence,9\n")
    with pytest.raises(
        CommandError, match=r"(?s)nothing was saved; 1 problem.*row 2, column `score`: score 9 is outside"
    ):
        call_command("import_judge_scores", str(bad), "--batch", "cmd", "--judge", "j", "--scale", "1-4")
    with pytest.raises(CommandError, match="--scale"):
        call_command("import_judge_scores", str(good), "--batch", "cmd", "--judge", "j", "--scale", "five")
    with pytest.raises(CommandError, match="no batch named"):
        call_command("import_judge_scores", str(good), "--batch", "nope", "--judge", "j", "--scale", "1-4")


@pytest.mark.django_db
def test_pairwise_verdicts_by_prompt_and_by_items():
    batch = make_batch("p", n_items=4, systems=("base", "new"))
    # Items p-0 (base) and p-1 (new) share prompt p0; p-2 and p-3 share p1.
    text = "prompt_id,winner,confidence\np0,enhanced,0.9\np1,tie,\n"
    assert (
        pairwise_verdicts_import(
            batch=batch, judge_name="pw", data=text.encode(), filename="v.csv", baseline_system="base"
        )
        == 2
    )
    verdict = PairwiseVerdict.objects.get(baseline__item_id="p-0")
    assert (verdict.enhanced.item_id, verdict.winner, verdict.confidence) == ("p-1", "enhanced", 0.9)
    jsonl = json.dumps({"baseline_item_id": "p-2", "enhanced_item_id": "p-3", "raw_output": GEVAL})
    pairwise_verdicts_import(batch=batch, judge_name="pw2", data=jsonl.encode(), filename="v.jsonl")
    assert PairwiseVerdict.objects.get(judge__name="pw2").winner == "enhanced"


@pytest.mark.django_db
def test_pairwise_verdicts_replace_the_judges_earlier_verdicts_on_the_same_pairs_only():
    batch = make_batch("p", n_items=4, systems=("base", "new"))
    first = "prompt_id,winner,confidence\np0,enhanced,0.9\np1,tie,\n"
    pairwise_verdicts_import(
        batch=batch, judge_name="pw", data=first.encode(), filename="v.csv", baseline_system="base"
    )
    pairwise_verdicts_import(
        batch=batch, judge_name="other", data=first.encode(), filename="v.csv", baseline_system="base"
    )
    again = "prompt_id,winner,confidence\np0,baseline,0.6\n"
    pairwise_verdicts_import(
        batch=batch, judge_name="pw", data=again.encode(), filename="v.csv", baseline_system="base"
    )
    mine = {v.baseline.item_id: v.winner for v in PairwiseVerdict.objects.filter(judge__name="pw")}
    assert mine == {"p-0": "baseline", "p-2": "tie"}
    assert PairwiseVerdict.objects.filter(judge__name="other").count() == 2


@pytest.mark.django_db
def test_pairwise_errors():
    batch = make_batch("p", n_items=4, systems=("base", "new"))
    text = "prompt_id,winner,confidence\np0,better,0.9\np9,tie,\np1,tie,1.4\n"
    with pytest.raises(ImportRefused) as caught:
        pairwise_verdicts_import(
            batch=batch, judge_name="pw", data=text.encode(), filename="v.csv", baseline_system="base"
        )
    messages = [str(e) for e in caught.value.errors]
    assert "row 2, column `winner`: winner is 'better'; expected baseline, enhanced or tie" in messages
    assert "row 3, column `prompt_id`: `p9` is not a prompt of this batch" in messages
    assert "row 4, column `confidence`: confidence 1.4 is outside 0–1" in messages
    assert PairwiseVerdict.objects.count() == 0
    with pytest.raises(ImportRefused, match="needs the baseline system"):
        pairwise_verdicts_import(
            batch=batch, judge_name="pw", data=b"prompt_id,winner\np0,tie\n", filename="v.csv"
        )


# ------------------------------------------------------------------ any bytes: rows or errors, never a crash


cells = st.sampled_from(
    ["b-0", "coherence", "overall", "0.5", "9" * 400, "nan", "-1", '{"score": 1}', "", "x,y", '"']
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(cells, min_size=1, max_size=4), max_size=5), st.sampled_from(["s.csv", "s.jsonl"]))
def test_any_judge_file_gives_rows_or_errors(rows, filename):
    header = "item_id,dimension,score,raw_output\n"
    data = (header + "\n".join(",".join(r) for r in rows)).encode()
    try:
        parsed = parse_judge_file(
            data,
            filename=filename,
            item_ids={"b-0"},
            dimensions=("coherence",),
            scale=JudgeScale.parse("0-1"),
        )
    except FileRefused:
        return
    for row in parsed.rows:
        assert row.value >= 1.0 and row.value <= 5.0, row.value  # noqa: PLR1716 (kept explicit)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_rows_errors_or_a_refusal(data):
    for parse in (
        lambda: parse_judge_file(
            data, filename="x.csv", item_ids={"b-0"}, dimensions=("coherence",), scale=JudgeScale.parse("1-5")
        ),
        lambda: parse_verdict_file(data, filename="x.jsonl", item_ids={"b-0"}, prompt_pairs={}),
    ):
        try:
            parse()
        except FileRefused:
            pass
