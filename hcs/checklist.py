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
