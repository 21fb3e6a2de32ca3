"""Traces to items with the online judge rules' path syntax."""

import json

import pytest
from django.core.management import CommandError, call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from annotator.judges.imports.trace_file import PathError, TracePath, parse_mapping, parse_trace_file
from annotator.judges.services.traces import batch_import_traces
from annotator.models import Item
from annotator.uploads.files.errors import FileRefused, ImportRefused
from hcs.rubric import Rubric

# A hub-coach trace shaped like the ones the seed's trace-level rules read.
HUB = {
    "id": "t1",
    "input": {
        "messages": [
            {"role": "system", "content": "Coach."},
            {"role": "user", "content": "How do I fix buzzing?"},
        ]
    },
    "output": {
        "messages": [
            {"role": "tool", "content": "metrics: pitch 62%"},
            {"role": "tool", "content": "practice data: 3 sessions"},
            {"role": "assistant", "content": "Press closer to the fret."},
        ]
    },
}
HUB_MAPPING = """
# the seed's hub_data_groundedness variables
prompt = input.messages[-1].content
context = output.messages[-2].content
response = output.messages[-1].content
"""


def test_paths_resolve_like_the_seed():
    assert TracePath.parse("input.messages[-1].content").resolve(HUB) == "How do I fix buzzing?"
    assert TracePath.parse("output.messages[-3].content").resolve(HUB) == "metrics: pitch 62%"
    nested = {"input": {"messages": [[["system", "x"], {"content": "pitch 80%"}]]}}
    assert TracePath.parse("input.messages[0][1].content").resolve(nested) == "pitch 80%"
    generations = {"output": {"generations": [[{"text": "Good, but timing - use a metronome"}]]}}
    assert TracePath.parse("output.generations[0][0].text").resolve(generations).startswith("Good")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("input.messages[-4].content", r"index \[-4\] is out of range; `input.messages` has 2 element"),
        ("input.prompt", r"`input.prompt` does not exist \(keys there: messages\)"),
        ("output.messages.content", r"`output.messages` is not an object"),
        ("id[0]", r"`id` is not a list"),
    ],
)
def test_unresolved_paths_say_where(path, message):
    with pytest.raises(PathError, match=message):
        TracePath.parse(path).resolve(HUB)


def test_malformed_mapping():
    with pytest.raises(PathError, match="mapping line 1: `an swer` is not a field name"):
        parse_mapping("an swer = output.output\n")
    with pytest.raises(PathError, match="needs `response = <path>`"):
        parse_mapping("prompt = input.x")
    with pytest.raises(PathError, match=r"mapping line 2: `input..x`: `` is not a key"):
        parse_mapping("prompt = input.x\nresponse = input..x")


@pytest.mark.django_db
def test_trace_items_are_created():
    second = json.loads(json.dumps(HUB)) | {"id": "t2"}
    data = "\n".join(json.dumps(t) for t in (HUB, second)).encode()
    batch = batch_import_traces(data=data, mapping=HUB_MAPPING, name="traces", k=3, rubric=Rubric.default())
    item = Item.objects.get(batch=batch, item_id="t1")
    assert item.prompt == "How do I fix buzzing?"
    assert item.context == "practice data: 3 sessions"
    assert item.response == "Press closer to the fret."
    assert batch.items.count() == 2


@pytest.mark.django_db
def test_a_path_that_does_not_resolve_names_line_and_path():
    short = {"id": "t3", "input": {"messages": []}, "output": {"messages": [{"content": "hi"}]}}
    data = (json.dumps(HUB) + "\n\n" + json.dumps(short)).encode()
    with pytest.raises(ImportRefused) as caught:
        batch_import_traces(data=data, mapping=HUB_MAPPING, name="traces", k=3, rubric=Rubric.default())
    messages = [str(e) for e in caught.value.errors]
    assert any(
        m.startswith("line 3, key `prompt`: `input.messages[-1].content`: index [-1] is out of range")
        for m in messages
    )
    assert any(m.startswith("line 3, key `context`: `output.messages[-2].content`") for m in messages)
    assert Item.objects.count() == 0


@pytest.mark.django_db
def test_thread_level_traces_keep_every_turn():
    turns = [
        ("hi", "Hello! What shall we practise?"),
        ("my timing drifts", "Try a metronome at 60 bpm."),
        ("why so slow??", "Slow first, then speed."),
    ]
    lines = [
        {
            "thread_id": "th-1",
            "input": {"messages": [{"role": "user", "content": u}]},
            "output": {"output": a},
        }
        for u, a in turns
    ] + [
        {
            "thread_id": "th-2",
            "input": {"messages": [{"role": "user", "content": "hey"}]},
            "output": {"output": "Hi"},
        }
    ]
    mapping = "thread = thread_id\nprompt = input.messages[-1].content\nresponse = output.output\n"
    data = "\n".join(json.dumps(t) for t in lines).encode()
    batch = batch_import_traces(data=data, mapping=mapping, name="threads", k=3, rubric=Rubric.default())
    item = Item.objects.get(batch=batch, item_id="th-1")
    assert item.prompt == "why so slow??"
    assert item.response == "Slow first, then speed."
    assert item.conversation == [
        {"role": r, "content": c} for u, a in turns for r, c in (("user", u), ("assistant", a))
    ]
    assert batch.items.count() == 2


@pytest.mark.django_db
def test_command(tmp_path, capsys):
    path = tmp_path / "traces.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": 7,
                "input": {"input": [{"content": "weak: timing"}]},
                "output": {"output": "A minor pentatonic"},
            }
        )
    )
    call_command(
        "import_traces",
        str(path),
        "--name",
        "studio",
        "--map",
        "prompt = input.input[0].content",
        "--map",
        "response = output.output",
    )
    assert "1 item from traces" in capsys.readouterr().out
    assert Item.objects.get(item_id="7").prompt == "weak: timing"
    with pytest.raises(CommandError, match="key `response`: `output.text`"):
        call_command(
            "import_traces",
            str(path),
            "--name",
            "studio2",
            "--map",
            "prompt = id",
            "--map",
            "response = output.text",
        )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "input", "output", "messages", "content", "thread_id"]), inner, max_size=3
        )
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=4), st.booleans())
def test_any_traces_give_items_or_errors(traces, threaded):
    mapping = parse_mapping(HUB_MAPPING + ("thread = thread_id\n" if threaded else ""))
    data = "\n".join(json.dumps(t) for t in traces).encode()
    try:
        parsed = parse_trace_file(data, mapping=mapping)
    except FileRefused:
        return
    assert parsed.errors or len(parsed.rows) >= 1
