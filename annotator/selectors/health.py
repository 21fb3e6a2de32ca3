"""Whether the database answers, within a bound a load balancer can wait for."""

from __future__ import annotations

from annotator.db_deadline import stall


def database_problem(*, timeout_s: float) -> str | None:
    """None when the database answered ``SELECT 1`` within ``timeout_s`` (and ``DB_STALL_PROBE_S``, the
    one bound by which this process calls the database stalled), else what went wrong.

    The probe runs in a thread of its own (with a fresh connection), so a database that stalls cannot
    hold the caller past ``timeout_s``. It is the same probe a stalled query starts
    (``annotator.db_deadline.stall``): a caller arriving while one is under way waits for that one
    instead of starting another, so a stalled database cannot pile up threads. While this process
    already knows the database is stalled, the answer is immediate (and a new probe is started now and
    then, so the answer turns back to None soon after the database does).
    """
    if stall.refuse():
        return stall.open_reason or "Timeout"
    return stall.probe().result(timeout_s)  # the probe's own bound (DB_STALL_PROBE_S) when that is shorter
