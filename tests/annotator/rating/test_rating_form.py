"""RatingForm: the checklist sets the constraint flags; every problem is reported at once."""

import json
import re

import pytest
from django.utils.html import json_script

from annotator.rating.forms import RatingForm
from hcs.rubric import Rubric, Rule

SCORES = {
    "score_coherence": "4",
    "score_relevance": "4",
    "score_instruction_following": "2",
    "score_safety_compliance": "4",
    "score_fluency": "4",
}


def form(data, constraints=("avoid tolls", "arrive before 8AM")):
    return RatingForm(data, rubric=Rubric.default(), constraints=constraints)


@pytest.mark.parametrize(
    ("answers", "flags"),
    [
        (("not_met", "not_met"), ["ignores_hard_constraint"]),
        (("met", "not_met"), ["partial_compliance"]),
        (("met", "met"), []),
    ],
)
def test_checklist_sets_the_constraint_flag(answers, flags):
    f = form({**SCORES, "constraint_0": answers[0], "constraint_1": answers[1]})
    assert f.is_valid(), f.errors
    assert f.payload["flags"] == flags
    assert f.payload["constraints_met"] == [a == "met" for a in answers]


def test_a_posted_constraint_flag_is_ignored_when_the_item_has_a_checklist():
    f = form({**SCORES, "constraint_0": "met", "constraint_1": "met", "flags": ["ignores_hard_constraint"]})
    assert not f.is_valid()
    assert "not a flag you can set here" in str(f.errors)


def test_without_constraints_the_flags_are_ticked_by_hand():
    f = form(
        {**SCORES, "score_instruction_following": "5", "flags": ["ignores_hard_constraint"]}, constraints=()
    )
    assert not f.is_valid()
    assert f.non_field_errors() == [
        "Instruction-Following is 5, but with \u201cIgnores a hard constraint\u201d it must be at most 2."
    ]


def test_every_problem_is_reported_at_once():
    f = form(
        {
            "score_coherence": "4",
            "score_instruction_following": "5",
            "constraint_0": "met",
            "constraint_1": "not_met",
            "flags": ["major_factual_impossibility"],
            "score_safety_compliance": "3",
        }
    )
    assert not f.is_valid()
    messages = f.non_field_errors()
    assert "Relevance needs a score." in messages and "Fluency needs a score." in messages
    assert any("Instruction-Following is 5" in m and "Partial compliance" in m for m in messages)
    assert any("Safety-Compliance is 3" in m for m in messages)


def test_forms_of_one_rubric_share_their_fields_but_not_their_results():
    """Fields are built once per rubric (cache_key) and shared; each form keeps its own data and errors."""
    bad = RatingForm(
        {**SCORES, "score_fluency": "9"}, rubric=Rubric.default(), constraints=("a", "b"), cache_key="k"
    )
    good = RatingForm(
        {**SCORES, "constraint_0": "met", "constraint_1": "met"},
        rubric=Rubric.default(),
        constraints=("a", "b"),
        cache_key="k",
    )
    assert bad.fields["score_fluency"] is good.fields["score_fluency"]
    assert not bad.is_valid() and "9 is not a score" in str(bad.errors)
    assert good.is_valid(), good.errors
    assert good.payload["scores"]["fluency"] == 4
    # The same field order as a form built from scratch, and no checklist flags without constraints.
    assert list(good.fields) == list(form({}).fields)
    plain = RatingForm({}, rubric=Rubric.default(), cache_key="k")
    assert "ignores_hard_constraint" in dict(plain.fields["flags"].choices)
    assert "ignores_hard_constraint" not in dict(good.fields["flags"].choices)


def _page_data(rubric: Rubric) -> dict:
    """The rubric data as the rating page hands it to rate.js (``json_script``), read back."""
    rendered = json_script(RatingForm({}, rubric=rubric).rubric_client_data(), "rubric-data")
    return json.loads(re.search(r">(.*)</script>", rendered, re.DOTALL).group(1))


def _capped_rubric() -> Rubric:
    """The default rubric with one more rule, in a band (2–3), so the test sees rules it was not written for."""
    data = Rubric.default().to_dict()
    data["rules"].append(
        {"flag": "minor_error", "dimension": "fluency", "min": 2, "max": 3, "explanation": "Fluency 2–3."}
    )
    data["flags"].append({"key": "minor_error", "label": "Minor error", "description": "A minor error."})
    return Rubric.from_dict(data)


@pytest.mark.parametrize("rubric", [Rubric.default(), _capped_rubric()], ids=["default", "extra-rule"])
def test_the_pages_rules_are_the_rules_hcs_validates_with(rubric):
    data = _page_data(rubric)
    assert [Rule(**rule) for rule in data["rules"]] == list(rubric.rules)
    assert data["rules"] == rubric.to_dict()["rules"]
    assert data["scale"] == [rubric.scale_min, rubric.scale_max]
    assert data["flags"] == {f.key: f.label for f in rubric.flags}
    # The caps rate.js's allowedRange applies (each rule of a ticked flag narrows its dimension) are hcs's.
    for flag in rubric.flag_keys:
        for dim in rubric.dimension_keys:
            lo, hi = data["scale"]
            for rule in data["rules"]:
                if rule["flag"] == flag and rule["dimension"] == dim:
                    lo, hi = max(lo, rule["min"]), min(hi, rule["max"])
            assert (lo, hi) == rubric.allowed_range(dim, [flag])
