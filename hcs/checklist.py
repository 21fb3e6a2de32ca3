"""The hard-constraint checklist rule: which flags a met / not-met checklist sets.

The guideline: a response that ignores the hard constraints scores Instruction-Following
2 at most; one that meets some but not all of several constraints gets a middle score
(2–3). The flags carry those caps (see the rubric's ``rules``); this module only decides
which flag the checklist implies. The rating page's JavaScript mirrors it.

>>> sorted(checklist_flags([False, False]))
['ignores_hard_constraint']
>>> sorted(checklist_flags([True, False]))
['partial_compliance']
>>> checklist_flags([True, True])
set()
>>> checklist_flags([])
set()

An item with one hard constraint can never be partly compliant:

>>> [sorted(flags) for flags in checklist_outcomes(1)]
[[], ['ignores_hard_constraint']]
>>> [sorted(flags) for flags in checklist_outcomes(3)]
[[], ['ignores_hard_constraint'], ['partial_compliance']]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

IGNORES = "ignores_hard_constraint"
PARTIAL = "partial_compliance"
CHECKLIST_FLAGS = frozenset({IGNORES, PARTIAL})


def checklist_flags(met: Sequence[bool], available: Iterable[str] = CHECKLIST_FLAGS) -> set[str]:
    """Flags implied by one answer per hard constraint: none met, some met, or all met.

    ``available`` limits the result to the flags a rubric defines, so a rubric without
    these flags gets none.
    """
    available = set(available)
    if not met:
        return set()
    n_met = sum(bool(m) for m in met)
    if n_met == 0:
        implied = {IGNORES}
    elif n_met < len(met):
        implied = {PARTIAL}
    else:
        implied = set()
    return implied & available


def checklist_outcomes(
    n_constraints: int, available: Iterable[str] = CHECKLIST_FLAGS
) -> list[frozenset[str]]:
    """Every set of flags the checklist can set on an item with ``n_constraints`` hard constraints
    (all met, none met, and, from two constraints on, some met); ``[frozenset()]`` for none."""
    if n_constraints <= 0:
        return [frozenset()]
    answers = [[True] * n_constraints, [False] * n_constraints]
    if n_constraints > 1:
        answers.append([True] + [False] * (n_constraints - 1))
    return [frozenset(checklist_flags(met, available)) for met in answers]
