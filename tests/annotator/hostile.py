"""An installation full of hostile text, for the untrusted-text tests (server side and browser).

Every text a person or a model can put in (item fields, conversation turns, constraints,
comments, skip reasons, judge names, reasons and raw outputs, batch names, rubric labels)
carries script and HTML payloads. Pages must show them as text.
"""

from __future__ import annotations

import copy
import json

from django.utils import timezone
from django.utils.html import escape

from annotator.models import Assignment, Batch, Item, Judge, JudgeScore, PairwiseVerdict
from annotator.rating.services.assignment import item_next_for_annotator
from annotator.services.api_tokens import api_token_create
from hcs.rubric import Rubric
from tests.factories import make_annotation, make_batch, make_user

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">click me</a>',
    '"><svg onload=alert(1)>',
    '\'><iframe src="javascript:alert(1)"></iframe>',
    "</textarea></title><script>alert(1)</script>",
    "<b>bold</b> <details open ontoggle=alert(1)>",
]
HOSTILE = " ".join(PAYLOADS)
SHORT = "<img src=x onerror=alert(1)>"  # for fields of at most 200 characters
DIMENSIONS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]


def text(field: str) -> str:
    return f"{field}: {HOSTILE}"


def hostile_rubric() -> Rubric:
    data = copy.deepcopy(Rubric.default().to_dict())
    data["title"] = SHORT
    data["dimensions"][0]["label"] = "Coherence " + SHORT
    data["dimensions"][0]["description"] = text("description")
    data["dimensions"][0]["levels"]["3"] = text("level")
    data["flags"][0]["label"] = "Flag " + SHORT
    data["flags"][0]["description"] = text("flag description")
    return Rubric.from_dict(data)


def build() -> dict:
    """Users of each role, a hostile batch whose first item the annotator has been given and rated
    (and whose second is given to them now), judges with hostile reasons, and a hostile skip."""
    users = {
        "annotator": make_user("rater", role="annotator"),
        "researcher": make_user("reader", role="researcher"),
        "admin": make_user("boss", role="admin"),
    }
    others = [make_user(f"other{i}") for i in range(3)]
    batch = make_batch(
        f"batch {SHORT}", n_items=6, k=3, systems=(SHORT, "plain-system"), rubric=hostile_rubric()
    )
    items = list(batch.items.order_by("position"))
    for i, item in enumerate(items):
        Item.objects.filter(pk=item.pk).update(
            item_id=f"{i}{SHORT}",
            prompt=text("prompt"),
            response=text("response"),
            context=text("context"),
            expected_output=text("expected"),
            constraints=[text("constraint one"), SHORT],
            conversation=[
                {"role": "user", "content": text("turn one")},
                {"role": SHORT, "content": text("turn two")},
                {"speaker": "assistant", "text": text("turn three")},
            ],
            metadata={"note": HOSTILE},
        )
    items = list(batch.items.order_by("position"))
    scores = {d: 3 for d in DIMENSIONS}
    for item in items[:2]:
        for j, person in enumerate(others):
            make_annotation(
                item, person, {d: 2 + j for d in DIMENSIONS}, comment=text(f"comment by {person}")
            )
    own = make_annotation(
        items[2],
        users["annotator"],
        scores,
        comment=text("own comment"),
        flags=[hostile_rubric().flags[0].key],
    )
    now = timezone.now()
    Assignment.objects.create(
        item=items[2],
        annotator=users["annotator"],
        state=Assignment.State.SUBMITTED,
        leased_at=now,
        lease_expires_at=now,
        finished_at=now,
    )
    Assignment.objects.create(
        item=items[0],
        annotator=users["admin"],
        state=Assignment.State.SKIPPED,
        leased_at=now,
        lease_expires_at=now,
        finished_at=now,
        skip_reason=text("skip reason"),
    )
    judge = Judge.objects.create(name=f"judge {SHORT}", model=SHORT, template=SHORT)
    JudgeScore.objects.bulk_create(
        JudgeScore(
            judge=judge,
            item=item,
            dimension=d,
            raw_value=0.5,
            scale_min=0,
            scale_max=1,
            value=3.0,
            reason=text("judge reason"),
            raw_output=json.dumps({"score": 0.5, "reason": HOSTILE}),
            imported_at=now,
        )
        for item in items
        for d in DIMENSIONS
    )
    pairwise = Judge.objects.create(name=f"pairwise {SHORT}")
    PairwiseVerdict.objects.create(
        judge=pairwise,
        baseline=items[1],
        enhanced=items[0],
        winner="enhanced",
        confidence=0.7,
        reason=text("verdict reason"),
        raw_output=HOSTILE,
    )
    lease = item_next_for_annotator(batch=batch, annotator=users["annotator"])
    api_token_create(user=users["researcher"], name=f"token {SHORT}", days=30)
    return {
        "users": users,
        "batch": Batch.objects.get(pk=batch.pk),
        "items": items,
        "own": own,
        "lease": lease,
    }


def hostile_upload_csv() -> bytes:
    """A batch file whose cells are hostile; one row is bad so the preview also lists errors."""
    rows = [["item_id", "prompt", "response", "system_id", "constraints", "conversation"]]
    rows.append(
        [
            "u1",
            text("upload prompt"),
            text("upload response"),
            SHORT,
            SHORT,
            json.dumps([{"role": SHORT, "content": text("upload turn")}]),
        ]
    )
    rows.append([SHORT, text("upload prompt 2"), "", SHORT, "", "not json " + SHORT])
    import csv
    import io

    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


def escaped_forms() -> list[str]:
    """What each payload must look like in an HTML page (Django's escaping)."""
    return [escape(p) for p in PAYLOADS]
