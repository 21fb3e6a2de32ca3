"""A stream's windows: calendar days or ISO weeks (UTC), or runs of N sampled traces.

Calendar windows are fixed spans of trace time. A count window holds N traces sampled for human
labels, in timestamp order, with every trace between its first sampled trace and the next window's:
the first window starts at the stream's earliest trace, the last ends just after its latest (it may
hold fewer than N). Count windows are cut on the sampled traces, not on those already labelled, so
a window does not move as labels arrive.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

UTC = dt.UTC
TICK = dt.timedelta(microseconds=1)


def calendar_start(when: dt.datetime, window: str) -> dt.datetime:
    """The start of the day or ISO week (Monday) holding ``when``, in UTC.

    >>> calendar_start(dt.datetime(2026, 3, 5, 13, tzinfo=UTC), "week").isoformat()
    '2026-03-02T00:00:00+00:00'
    """
    day = when.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if window == "week":
        day -= dt.timedelta(days=day.weekday())
    return day


def calendar_span(when: dt.datetime, window: str) -> tuple[dt.datetime, dt.datetime]:
    start = calendar_start(when, window)
    return start, start + dt.timedelta(days=7 if window == "week" else 1)


def count_windows(
    sampled_times: Sequence[dt.datetime], n: int, first: dt.datetime, last: dt.datetime
) -> list[tuple[dt.datetime, dt.datetime]]:
    """Count windows of ``n`` sampled traces (``sampled_times`` sorted) over traces from ``first`` to
    ``last`` (the stream's earliest and latest timestamps).

    >>> t = [dt.datetime(2026, 1, d, tzinfo=UTC) for d in (2, 3, 4, 5, 6)]
    >>> [(a.day, b.day) for a, b in count_windows(t, 2, t[0] - dt.timedelta(days=1), t[-1])]
    [(1, 4), (4, 6), (6, 6)]
    """
    starts = [first] + [sampled_times[i] for i in range(n, len(sampled_times), n)]
    ends = starts[1:] + [last + TICK]
    return [(a, b) for a, b in zip(starts, ends) if b > a]
