"""Traces as the judge rules read them: optional context may be absent (it renders empty), and a thread's
turns follow the traces' start times, not their places in the file."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotator.judges.engine.templates import item_fields, load_template
from annotator.judges.imports.trace_file import parse_mapping, start_time
from annotator.judges.services.traces import batch_import_traces
from annotator.models import Item
from annotator.uploads.files.errors import ImportRefused
from hcs.rubric import Rubric

NO_TOOLS = {
    "id": "t-bare",
    "input": {"messages": [{"role": "user", "content": "Hello coach"}]},
    "output": {"messages": [{"role": "assistant", "content": "Hi! Ready to practise?"}]},
}
WITH_TOOLS = {
    "id": "t-tools",
    "input": {"messages": [{"role": "user", "content": "How did I do?"}]},
    "output": {
        "messages": [
            {"role": "tool", "content": "pitch 62%"},
            {"role": "tool", "content": "3 sessions"},
            {"role": "assistant", "content": "Pitch was 62%."},
        ]
    },
}


def _file(tmp_path, traces):
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in traces), encoding="utf-8")
    return str(path)


@pytest.mark.django_db
def test_a_trace_without_the_optional_context_renders_it_empty(tmp_path, capsys):
    call_command(
        "import_traces",
        _file(tmp_path, [NO_TOOLS, WITH_TOOLS]),
        "--name",
        "hub",
        "--template",
        "hub_data_groundedness",
    )
    bare, tools = Item.objects.get(item_id="t-bare"), Item.objects.get(item_id="t-tools")
    assert (bare.context, bare.metadata.get("more-context", "")) == ("", "")
    assert (tools.context, tools.metadata["more-context"]) == ("3 sessions", "pitch 62%")
    capsys.readouterr()
    call_command("run_judge", "hub", "--template", "hub_data_groundedness", "--show-prompt", "2")
    shown = capsys.readouterr().out
    bare_prompt = (
        shown.split("===== item t-tools")[0]
        if shown.index("t-bare") < shown.index("t-tools")
        else shown.split("===== item t-bare")[1]
    )
    assert (
        "CONTEXT:\n\n\nMORE CONTEXT IF NEEDED(Use Only If Applicable):\n\n\nASSISTANT OUTPUT:\nHi! Ready"
        in bare_prompt
    )
    messages = load_template("hub_data_groundedness").render(item_fields(bare, bare.batch.rubric_obj))
    assert "{{" not in messages[-1]["content"]


@pytest.mark.django_db
def test_a_required_path_past_the_end_is_still_refused_and_says_how_to_allow_it(tmp_path):
    mapping = "prompt = input.messages[-1].content\ncontext = output.messages[-2].content\nresponse = output.messages[-1].content"
    with pytest.raises(ImportRefused) as refused:
        batch_import_traces(
            data=json.dumps(NO_TOOLS).encode(), mapping=mapping, name="strict", k=3, rubric=Rubric.default()
        )
    (error,) = refused.value.errors
    assert (error.row, error.column) == (1, "context")
    assert (
        "index [-2] is out of range" in error.message
        and "end the field with ? if it may be absent" in error.message
    )
    # optional, but the wrong kind of value is still an error: the mapping is wrong, not the trace short
    with pytest.raises(ImportRefused):
        batch_import_traces(
            data=json.dumps(NO_TOOLS).encode(),
            mapping=mapping.replace("context =", "context? =").replace(
                "output.messages[-2].content", "output.messages.content"
            ),
            name="x",
            k=3,
            rubric=Rubric.default(),
        )
    with pytest.raises(Exception, match="`prompt` cannot be optional"):
        parse_mapping("prompt? = a\nresponse = b")


def test_start_times():
    assert start_time("2025-03-01T10:00:00Z") == start_time(1740823200) == start_time("2025-03-01T10:00:00")
    assert start_time(None) is None
    with pytest.raises(ValueError, match="is not a time"):
        start_time("yesterday")


THREAD = [  # a newest-first export: the frustrated last message comes first in the file
    {
        "thread_id": "th",
        "start_time": "2025-03-01T10:02:00Z",
        "input": {"messages": [{"role": "user", "content": "Why is it so hard to get a straight answer?"}]},
        "output": {"messages": [{"role": "assistant", "content": "Sorry: use a metronome at 60 bpm."}]},
    },
    {
        "thread_id": "th",
        "start_time": "2025-03-01T10:01:00Z",
        "input": {"messages": [{"role": "user", "content": "That is too vague."}]},
        "output": {"messages": [{"role": "assistant", "content": "Practise slowly."}]},
    },
    {
        "thread_id": "th",
        "start_time": "2025-03-01T10:00:00Z",
        "input": {"messages": [{"role": "user", "content": "My timing drifts."}]},
        "output": {"messages": [{"role": "assistant", "content": "Keep going."}]},
    },
]


@pytest.mark.django_db
def test_thread_turns_follow_start_time_not_file_order(tmp_path, capsys):
    call_command(
        "import_traces",
        _file(tmp_path, THREAD),
        "--name",
        "threads",
        "--template",
        "hub_user_frustration_score",
    )
    item = Item.objects.get(item_id="th")
    assert item.prompt == "Why is it so hard to get a straight answer?"
    assert item.response == "Sorry: use a metronome at 60 bpm."
    assert [t["content"] for t in item.conversation if t["role"] == "user"] == [
        "My timing drifts.",
        "That is too vague.",
        "Why is it so hard to get a straight answer?",
    ]
    capsys.readouterr()
    call_command("run_judge", "threads", "--template", "hub_user_frustration_score", "--show-prompt", "1")
    turns = capsys.readouterr().out.split("** Turns: **")[1]
    assert (
        turns.index("My timing drifts.") < turns.index("That is too vague.") < turns.index("straight answer?")
    )


@pytest.mark.django_db
def test_a_mapped_start_time_and_a_bad_one(tmp_path):
    traces = [{**t, "meta": {"ts": 100 - n}} for n, t in enumerate(THREAD)]
    for t in traces:
        del t["start_time"]
    mapping = (
        "thread = thread_id\nprompt = input.messages[-1].content\nresponse = output.messages[-1].content\n"
        "start_time = meta.ts"
    )
    batch = batch_import_traces(
        data="\n".join(map(json.dumps, traces)).encode(),
        mapping=mapping,
        name="mapped",
        k=3,
        rubric=Rubric.default(),
    )
    assert batch.items.get().prompt == "Why is it so hard to get a straight answer?"
    bad = [{**THREAD[0], "start_time": "soon"}]
    with pytest.raises(ImportRefused) as refused:
        batch_import_traces(
            data=json.dumps(bad[0]).encode(),
            mapping=mapping.rsplit("\n", 1)[0],
            name="bad",
            k=3,
            rubric=Rubric.default(),
        )
    (error,) = refused.value.errors
    assert error.column == "start_time" and "`soon` is not a time" in error.message


@pytest.mark.django_db
def test_without_start_times_file_order_holds(tmp_path):
    traces = [{k: v for k, v in t.items() if k != "start_time"} for t in THREAD]
    call_command(
        "import_traces",
        _file(tmp_path, traces),
        "--name",
        "plain",
        "--template",
        "hub_user_frustration_score",
    )
    assert Item.objects.get(item_id="th").prompt == "My timing drifts."  # the file's last trace
