"""The seed's eleven rules and two templates ship verbatim and render completely on production-shaped traces."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from annotator.judges.engine.templates import (
    SYNTAXES,
    JudgeTemplate,
    TemplateError,
    available_templates,
    item_fields,
    load_template,
    pair_fields,
)
from annotator.judges.services.traces import batch_import_traces
from annotator.models import Item
from hcs.rubric import Rubric

SEEDS = Path(__file__).resolve().parents[4] / "shared" / "seeds"
RULES = [
    "hub_answer_correctness",
    "hub_data_groundedness",
    "hub_context_usage_quality",
    "hub_actionability",
    "hub_response_clarity",
    "studio_practice_recommendation_alignment",
    "studio_immediate_actionability",
    "studio_live_coach_feedback_quality",
    "hub_conversational_coherence",
    "hub_user_frustration_score",
    "studio_live_feedback_effectiveness",
]


def hub_trace(n: int, thread: str = "") -> dict:
    """An Opik hub-coach trace: the user's message last in input, tool outputs then the reply in output."""
    return {
        "id": f"hub-{thread}{n}",
        "thread_id": thread or None,
        "input": {
            "messages": [
                {"role": "system", "content": "You are FretCoach."},
                {"role": "user", "content": f"USERMSG{n}: how do I stop fret buzz?"},
            ]
        },
        "output": {
            "messages": [
                {"role": "tool", "content": f"MORECTX{n}: last sessions 62% pitch"},
                {"role": "tool", "content": f"CTX{n}: string gauge .010"},
                {"role": "assistant", "content": f"REPLY{n}: press closer to the fret."},
            ]
        },
    }


def studio_trace(n: int) -> dict:
    return {
        "id": f"studio-{n}",
        "input": {"input": [{"role": "user", "content": f"PRACTICEDATA{n}: weakest timing"}]},
        "output": {"output": f"RECOMMEND{n}: A minor natural, strictness 0.6"},
    }


def live_trace(n: int, thread: str = "") -> dict:
    return {
        "id": f"live-{thread}{n}",
        "thread_id": thread or None,
        "input": {
            "messages": [[["system", "coach rules"], {"role": "user", "content": f"METRICS{n}: pitch 80%"}]]
        },
        "output": {"generations": [[{"text": f"FEEDBACK{n}: good pitch, but timing - use a metronome"}]]},
    }


def traces_for(name: str) -> list[dict]:
    if name in ("hub_conversational_coherence", "hub_user_frustration_score"):
        return [hub_trace(n, "t1") for n in range(3)]
    if name == "studio_live_feedback_effectiveness":
        return [live_trace(n, "s1") for n in range(3)]
    if name.startswith("hub_"):
        return [hub_trace(0)]
    if name == "studio_live_coach_feedback_quality":
        return [live_trace(0)]
    if name.startswith("studio_"):
        return [studio_trace(0)]
    if name == "reference_answer":
        return [
            {
                "id": "r0",
                "input": "USERMSG0",
                "output": "REPLY0",
                "expected_output": "EXPECTED0",
                "context": "CTX0",
            }
        ]
    if name == "geval_pairwise":
        return [
            {
                "id": f"g-{s}",
                "metadata": {"prompt_id": "p1", "system": s},
                "input": {"messages": [{"role": "user", "content": "TASK0"}]},
                "output": {"messages": [{"role": "assistant", "content": f"RESPONSE-{s}"}]},
            }
            for s in ("A", "B")
        ]
    raise AssertionError(name)


def seed_rule_text(number: int) -> str:
    text = (SEEDS / "online_evaluation_rules_llm_judge.md").read_text(encoding="utf-8")
    heads = list(re.finditer(r"^#### (\d+)\. (\w+)\n\n", text, re.MULTILINE))
    head = heads[number - 1]
    end = heads[number].start() if number < len(heads) else len(text)
    body = text[head.end() : end].split("\n\n**Variable mappings:**\n")[0]
    return body.split("\n\n---\n")[0].rstrip("\n")


def test_every_rule_and_both_templates_ship():
    assert set(RULES) | {"geval_pairwise", "reference_answer", "hcs_rubric"} == set(available_templates())


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents are not beside this checkout")
@pytest.mark.parametrize("number", range(1, 12))
def test_rules_are_verbatim(number):
    template = load_template(RULES[number - 1])
    assert template.prompt == seed_rule_text(number)
    assert template.source["source"].endswith(f"rule {number}")


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents are not beside this checkout")
def test_templates_are_verbatim():
    reference = (SEEDS / "reference_answer_judge_template.md").read_text(encoding="utf-8").splitlines()
    assert load_template("reference_answer").prompt.splitlines() == [
        re.sub(r"^\| \d+ \| ?(.*?) ?\|$", r"\1", x) for x in reference
    ]
    geval = (SEEDS / "geval_pairwise_judge_template.md").read_text(encoding="utf-8")
    assert load_template("geval_pairwise").prompt in geval
    assert load_template("geval_pairwise").prompt.startswith(
        "You are evaluating an AI assistant's response quality."
    )


@pytest.mark.django_db
@pytest.mark.parametrize("name", [*RULES, "reference_answer", "geval_pairwise"])
def test_each_template_renders_completely_on_production_traces(name):
    template = load_template(name)
    data = "\n".join(json.dumps(t) for t in traces_for(name)).encode()
    mapping = {k: v for k, v in template.trace_mapping.items()}
    batch = batch_import_traces(data=data, mapping=mapping, name=name, k=3, rubric=Rubric.default())
    items = list(Item.objects.filter(batch=batch).order_by("position"))
    rubric = batch.rubric_obj
    fields = pair_fields(items[0], items[1], rubric) if template.pairwise else item_fields(items[0], rubric)
    text = "\n".join(m["content"] for m in template.render(fields))
    left = SYNTAXES[template.syntax].findall(text)
    assert left == [], f"unrendered: {left}"
    assert "{{" not in text
    for placeholder in template.placeholders:
        value = (
            template.constants.get(placeholder) or fields[template.variables.get(placeholder, placeholder)]
        )
        assert value and value in text, placeholder
    if name.startswith("hub_data"):
        assert "MORECTX0: last sessions" in text and "CTX0: string gauge" in text
    if name in ("hub_conversational_coherence", "hub_user_frustration_score"):
        # the whole thread, its final assistant reply included
        assert text.count("USERMSG") == 3 and text.rstrip().endswith(
            "assistant: REPLY2: press closer to the fret."
        )
    if name == "reference_answer":
        assert '"answer_match" METRIC' in text and "EXPECTED0" in text and "{input}" not in text
    if name == "geval_pairwise":
        assert "TASK0" in text and "RESPONSE-A" in text and "RESPONSE-B" in text


def test_a_hyphenated_variable_is_filled_and_a_missing_one_refused():
    template = load_template("hub_actionability")
    assert template.placeholders == ("input", "context", "more-context", "output")
    rendered = template.render({"input": "I", "output": "O", "context": "", "more-context": "MC"})[-1][
        "content"
    ]
    assert "MORE CONTEXT IF NEEDED(Use Only If Applicable):\nMC\n" in rendered
    with pytest.raises(TemplateError, match="`output` is empty"):
        template.render({"input": "I", "output": " ", "context": "", "more-context": ""})
    with pytest.raises(TemplateError, match="`input` is not a field of the item"):
        template.render({"output": "O"})


def test_single_brace_syntax_leaves_json_braces_alone():
    template = JudgeTemplate.from_dict(
        {
            "name": "t",
            "scale": "0-1",
            "syntax": "single",
            "prompt": 'Score {input}. Reply {"score": 1} or {{literal}}.',
        }
    )
    assert template.placeholders == ("input",)
    assert template.render({"input": "X"})[-1]["content"] == 'Score X. Reply {"score": 1} or {{literal}}.'


def test_changed_text_changes_the_hash_but_a_description_does_not():
    base = {"name": "t", "version": "1", "scale": "0-1", "prompt": "Rate {{output}}."}
    first = JudgeTemplate.from_dict(base)
    assert JudgeTemplate.from_dict(base | {"description": "new words"}).content_hash == first.content_hash
    assert (
        JudgeTemplate.from_dict(base | {"prompt": "Rate {{output}} now."}).content_hash != first.content_hash
    )
    assert JudgeTemplate.from_dict(base | {"labels": {"Good": 1}}).content_hash != first.content_hash


@pytest.mark.django_db
def test_conversation_ends_with_the_final_assistant_turn():
    from tests.factories import make_batch

    item = make_batch("conv", n_items=1).items.get()
    item.conversation = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"}]
    fields = item_fields(item, Rubric.default())
    assert fields["conversation"].splitlines() == [
        "user: hi",
        "assistant: Hello",
        f"user: {item.prompt}",
        f"assistant: {item.response}",
    ]
    assert fields["thread"].splitlines()[-1] == f"user: {item.prompt}"


@pytest.mark.django_db
def test_import_traces_with_a_rules_mapping_then_show_its_prompt(tmp_path, capsys):
    from django.core.management import call_command

    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(hub_trace(n)) for n in range(2)))
    call_command("import_traces", str(path), "--name", "hub", "--template", "hub_data_groundedness")
    item = Item.objects.get(item_id="hub-0")
    assert (item.prompt, item.context) == ("USERMSG0: how do I stop fret buzz?", "CTX0: string gauge .010")
    assert item.metadata == {"more-context": "MORECTX0: last sessions 62% pitch"}
    call_command("run_judge", "hub", "--template", "hub_data_groundedness", "--show-prompt", "1")
    out = capsys.readouterr().out
    assert "MORE CONTEXT IF NEEDED(Use Only If Applicable):\nMORECTX0: last sessions 62% pitch\n" in out
    assert "ASSISTANT OUTPUT:\nREPLY0: press closer to the fret." in out and "hub-1" not in out
