"""A real multi-rater study through import_annotations: HANNA (Chhun et al., COLING 2022).

1,056 stories x 3 raters x 6 criteria, imported with a second rubric file
(fixtures/rubrics/hanna.json); what the database holds afterwards must equal the source file.
"""

from pathlib import Path

import pandas as pd
import pytest
from django.db.models import Count

from annotator.models import Annotation, Batch, Item, Score
from annotator.uploads.services.annotation_imports import annotations_import_file
from hcs.rubric import Rubric
from tests.hanna import HANNA_HUMAN as HANNA

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

RUBRIC = Path(__file__).resolve().parents[3] / "fixtures" / "rubrics" / "hanna.json"


@pytest.fixture(scope="module")
def hanna_long():
    return pd.read_csv(HANNA)


def as_annotation_csv(long: pd.DataFrame) -> bytes:
    wide = (
        long.assign(criterion=long["criterion"].str.lower())
        .pivot_table(
            index=["story_id", "model", "rater"], columns="criterion", values="score", aggfunc="first"
        )
        .reset_index()
    )
    wide["item_id"] = "story-" + wide["story_id"].astype(str)
    wide["system_id"] = wide["model"]
    # Story texts are not in the data set; placeholders stand in for them.
    wide["prompt"] = "Writing prompt for story " + wide["story_id"].astype(str)
    wide["response"] = "Story " + wide["story_id"].astype(str) + " by " + wide["model"]
    wide["annotator"] = wide["rater"].str.replace("rater_slot_", "hanna_rater_", regex=False)
    columns = ["item_id", "system_id", "prompt", "response", "annotator", *Rubric.load(RUBRIC).dimension_keys]
    return wide[columns].to_csv(index=False).encode("utf-8")


def test_hanna_imports_whole_and_the_database_equals_the_file(hanna_long):
    plan = annotations_import_file(
        data=as_annotation_csv(hanna_long),
        filename="hanna.csv",
        batch_name="HANNA",
        rubric=Rubric.load(RUBRIC),
    )
    assert (
        plan.ok
        and len(plan.new_items) == 1056
        and plan.new_users == ["hanna_rater_1", "hanna_rater_2", "hanna_rater_3"]
    )
    batch = Batch.objects.get(name="HANNA")
    assert batch.rubric_obj.name == "hanna"
    assert Item.objects.filter(batch=batch).count() == 1056
    assert set(Item.objects.filter(batch=batch).values_list("n_annotations", flat=True)) == {3}
    assert Annotation.objects.filter(item__batch=batch).count() == 1056 * 3
    assert Score.objects.filter(item__batch=batch).count() == len(hanna_long) == 19008
    stored = {
        (row["dimension"], row["value"]): row["n"]
        for row in Score.objects.filter(item__batch=batch)
        .values("dimension", "value")
        .annotate(n=Count("id"))
    }
    source = (
        hanna_long.assign(criterion=hanna_long["criterion"].str.lower())
        .groupby(["criterion", "score"])
        .size()
    )
    assert stored == {(c, int(v)): int(n) for (c, v), n in source.items()}
    assert len(set(Item.objects.filter(batch=batch).values_list("system_id", flat=True))) == 11
