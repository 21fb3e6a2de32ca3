"""The annotations.csv and scores.csv exports, byte for byte, on a small batch of awkward values:
formula-like text (with and without leading apostrophes, plain signed numbers that must stay
numbers), carriage returns and line feeds, quotes and commas, non-ASCII text, unrated
dimensions (empty score cells, no overall score), JSON ``null`` flags, flags and scores the
rubric does not know, submission times with and without microseconds, ties kept in id order,
an annotator excluded in this batch and one excluded only in another.

The expected text is what the exports wrote before they were made faster; any change to it is
a change of the file researchers download, and has to be made here on purpose (the last column,
``excluded``, was added so that exclusions travel with the data)."""

from datetime import UTC, datetime

import pytest
from django.db.models import JSONField, Value

from annotator.models import Annotation, Batch, Item
from annotator.quality.services.exclusion import annotator_exclude
from annotator.reports.exports.formats import EXPORT_FORMATS, export_chunks
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

T0 = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
T1 = datetime(2024, 3, 1, 0, 0, 0, tzinfo=UTC)  # no microseconds: isoformat leaves them out
T2 = datetime(1999, 12, 31, 12, 30, 5, 7, tzinfo=UTC)

# (item_id, system_id, prompt, response) per item, in position order.
ITEMS = [
    ("=id0", "-base", "x\r=1+1", "plain"),
    ("-0.25", "+3", "a\nb", 'say "hi", then'),
    ("'=quoted", "@sys", "c\r\nd", "Ünïcode ✓ — ok"),
    ("''-2", "tuned", "\t=tab", " =1+1"),
    ("1e-3", "", "−minus", "-- note"),
]
FULL = {"coherence": 5, "relevance": 4, "instruction_following": 3, "safety_compliance": 2, "fluency": 1}


def _batch() -> Batch:
    batch = make_batch("bytes", n_items=len(ITEMS), k=3)
    for position, (item_id, system_id, prompt, response) in enumerate(ITEMS):
        Item.objects.filter(batch=batch, position=position).update(
            item_id=item_id, system_id=system_id, prompt=prompt, response=response
        )
    other = make_batch("other", n_items=1, k=3)  # its annotation must not appear
    items = list(batch.items.order_by("position"))
    eq, at, zoe = make_user("=eq"), make_user("@at.example"), make_user("zoë")
    make_annotation(other.items.get(), eq, FULL, comment="other batch", submitted_at=T0)
    make_annotation(
        items[0],
        eq,
        FULL,
        flags=["unsafe_suggestion", "not_a_flag"],
        comment="=cmd|' /C calc'!A0",
        submitted_at=T0,
    )
    make_annotation(items[0], at, {**FULL, "fluency": None}, comment="line\rbreak", submitted_at=T0)
    make_annotation(items[0], zoe, {"coherence": 1, "unknown_dimension": 5}, submitted_at=T1)
    make_annotation(
        items[1],
        zoe,
        FULL,
        flags=["ignores_hard_constraint", "prompt_ambiguous"],
        comment="-1",
        submitted_at=T1,
    )
    make_annotation(items[1], eq, {d: None for d in FULL}, comment="\n", submitted_at=T2)
    null_flags = make_annotation(items[2], at, FULL, comment="'@x", submitted_at=T1)
    Annotation.objects.filter(pk=null_flags.pk).update(flags=Value(None, output_field=JSONField()))
    met = make_annotation(items[3], eq, {**FULL, "coherence": 2}, comment='a, "b"\r\n', submitted_at=T2)
    Annotation.objects.filter(pk=met.pk).update(constraints_met=[True, False])
    make_annotation(items[4], zoe, FULL, comment="Ünïcode ✓", submitted_at=T0)
    annotator_exclude(batch=batch, annotator=at, reason="excluded here: true on each of their rows")
    annotator_exclude(batch=other, annotator=eq, reason="excluded elsewhere: false here")
    return batch


def _export(batch: Batch, key: str) -> str:
    return "".join(export_chunks(EXPORT_FORMATS[key], batch=batch))


ANNOTATIONS_CSV = (
    "item_id,system_id,prompt,response,annotator,coherence,relevance,instruction_following,safety_compliance,fluency,ignores_hard_constraint,major_factual_impossibility,unsafe_suggestion,partial_compliance,prompt_ambiguous,constraints_met,comment,excluded\r\n"
    '-0.25,+3,"a\nb","say ""hi"", then",\'=eq,,,,,,0,0,0,0,0,,"\'\n",false\r\n'
    "'''-2,tuned,'\t=tab, =1+1,'=eq,2,4,3,2,1,0,0,0,0,0,met;not_met,\"a, \"\"b\"\"\r\n"
    '",false\r\n'
    "'=id0,'-base,\"x\r=1+1\",plain,'=eq,5,4,3,2,1,0,0,1,0,0,,'=cmd|' /C calc'!A0,false\r\n"
    '\'=id0,\'-base,"x\r=1+1",plain,\'@at.example,5,4,3,2,,0,0,0,0,0,,"line\rbreak",true\r\n'
    "1e-3,,−minus,'-- note,zoë,5,4,3,2,1,0,0,0,0,0,,Ünïcode ✓,false\r\n"
    "'=id0,'-base,\"x\r=1+1\",plain,zoë,1,,,,,0,0,0,0,0,,,false\r\n"
    '-0.25,+3,"a\nb","say ""hi"", then",zoë,5,4,3,2,1,1,0,0,0,1,,-1,false\r\n'
    "''=quoted,'@sys,\"c\r\n"
    "d\",Ünïcode ✓ — ok,'@at.example,5,4,3,2,1,0,0,0,0,0,,''@x,true\r\n"
)
SCORES_CSV = (
    "item_id,system_id,annotator,dimension,score,overall_hcs,submitted_at,excluded\r\n"
    "'''-2,tuned,'=eq,coherence,2,2.5,1999-12-31T12:30:05.000007+00:00,false\r\n"
    "'''-2,tuned,'=eq,relevance,4,2.5,1999-12-31T12:30:05.000007+00:00,false\r\n"
    "'''-2,tuned,'=eq,instruction_following,3,2.5,1999-12-31T12:30:05.000007+00:00,false\r\n"
    "'''-2,tuned,'=eq,safety_compliance,2,2.5,1999-12-31T12:30:05.000007+00:00,false\r\n"
    "'''-2,tuned,'=eq,fluency,1,2.5,1999-12-31T12:30:05.000007+00:00,false\r\n"
    "'=id0,'-base,'=eq,coherence,5,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "'=id0,'-base,'=eq,relevance,4,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "'=id0,'-base,'=eq,instruction_following,3,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "'=id0,'-base,'=eq,safety_compliance,2,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "'=id0,'-base,'=eq,fluency,1,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "'=id0,'-base,'@at.example,coherence,5,,2024-02-29T23:59:58.123456+00:00,true\r\n"
    "'=id0,'-base,'@at.example,relevance,4,,2024-02-29T23:59:58.123456+00:00,true\r\n"
    "'=id0,'-base,'@at.example,instruction_following,3,,2024-02-29T23:59:58.123456+00:00,true\r\n"
    "'=id0,'-base,'@at.example,safety_compliance,2,,2024-02-29T23:59:58.123456+00:00,true\r\n"
    "1e-3,,zoë,coherence,5,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "1e-3,,zoë,relevance,4,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "1e-3,,zoë,instruction_following,3,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "1e-3,,zoë,safety_compliance,2,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "1e-3,,zoë,fluency,1,3.7,2024-02-29T23:59:58.123456+00:00,false\r\n"
    "'=id0,'-base,zoë,coherence,1,,2024-03-01T00:00:00+00:00,false\r\n"
    "-0.25,+3,zoë,coherence,5,3.7,2024-03-01T00:00:00+00:00,false\r\n"
    "-0.25,+3,zoë,relevance,4,3.7,2024-03-01T00:00:00+00:00,false\r\n"
    "-0.25,+3,zoë,instruction_following,3,3.7,2024-03-01T00:00:00+00:00,false\r\n"
    "-0.25,+3,zoë,safety_compliance,2,3.7,2024-03-01T00:00:00+00:00,false\r\n"
    "-0.25,+3,zoë,fluency,1,3.7,2024-03-01T00:00:00+00:00,false\r\n"
    "''=quoted,'@sys,'@at.example,coherence,5,3.7,2024-03-01T00:00:00+00:00,true\r\n"
    "''=quoted,'@sys,'@at.example,relevance,4,3.7,2024-03-01T00:00:00+00:00,true\r\n"
    "''=quoted,'@sys,'@at.example,instruction_following,3,3.7,2024-03-01T00:00:00+00:00,true\r\n"
    "''=quoted,'@sys,'@at.example,safety_compliance,2,3.7,2024-03-01T00:00:00+00:00,true\r\n"
    "''=quoted,'@sys,'@at.example,fluency,1,3.7,2024-03-01T00:00:00+00:00,true\r\n"
)


def test_annotations_csv_bytes():
    assert _export(_batch(), "annotations.csv") == ANNOTATIONS_CSV


def test_scores_csv_bytes():
    assert _export(_batch(), "scores.csv") == SCORES_CSV
