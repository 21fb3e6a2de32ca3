"""The stream pages (researchers): the list, one stream's series plotted, and its CSV."""

from __future__ import annotations

import datetime as dt

from django.conf import settings as django_settings
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotator.models import Stream
from annotator.roles import researcher_required

CSV_COLUMNS = [
    "start",
    "end",
    "n_traces",
    "n_human",
    "agreement_metric",
    "agreement",
    "agreement_low",
    "agreement_high",
    "human_mean",
    "human_mean_low",
    "human_mean_high",
    "ppi",
    "ppi_low",
    "ppi_high",
    "judge_mean",
    "human_alpha",
    "human_alpha_low",
    "human_alpha_high",
    # Added after the first release: appended, so a reader of the old columns by position still works.
    "n_judge",
    "n_paired",
]


def _stream(stream_name: str) -> Stream:
    return get_object_or_404(Stream.objects.select_related("batch"), name=stream_name)


def _choice(request, stream: Stream) -> tuple[str, str]:
    dimensions = list(stream.batch.rubric_obj.dimension_keys)
    judge = request.GET.get("judge") or (stream.judges[0] if stream.judges else "")
    dimension = request.GET.get("dimension") or dimensions[0]
    if judge not in stream.judges or dimension not in dimensions:
        raise Http404("No such judge or dimension in this stream.")
    return judge, dimension


def _triple(stat: dict | None) -> tuple:
    stat = stat or {}
    ci = stat.get("ci95") or (None, None)
    return stat.get("estimate"), ci[0], ci[1]


def series_rows(windows: list[dict]) -> list[list]:
    rows = []
    for w in windows:
        agreement = w.get("agreement") or {}
        rows.append(
            [
                w["start"].isoformat(),
                w["end"].isoformat(),
                w["n_traces"],
                w["n_human"],
                agreement.get("metric", ""),
                *_triple(agreement),
                *_triple(w.get("human_mean")),
                *_triple(w.get("ppi")),
                w.get("judge_mean"),
                *_triple(w.get("human_alpha")),
                w.get("n_judge"),
                w.get("n_paired"),
            ]
        )
    return rows


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def when(moment: dt.datetime | str | None, *, time: bool | None = None) -> str:
    """A time on the pages, in UTC: "7 Dec 2026" at midnight, "7 Dec 2026 14:05" otherwise (``time``:
    always or never the time of day)."""
    if not moment:
        return "—"
    if isinstance(moment, str):
        try:
            moment = dt.datetime.fromisoformat(moment)
        except ValueError:
            return moment
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
    day = f"{moment.day} {MONTHS[moment.month - 1]} {moment.year}"
    if time is None:
        time = moment.time() != dt.time(0)
    return f"{day} {moment:%H:%M}" if time else day


def window_label(start: dt.datetime, end: dt.datetime, *, open_end: bool = False) -> str:
    """A window: its day ("7 Dec 2026"), its days ("7 Dec 2026 – 13 Dec 2026", the last day included)
    when it runs from midnight to midnight, else its start and (exclusive) end with their times. A count
    stream's last window (``open_end``) is still filling: its end is only just after its latest trace, so
    it is written from its start on ("7 Dec 2026 14:05 onwards (open)")."""
    if open_end:
        return f"{when(start, time=True)} onwards (open)"
    whole = start.astimezone(dt.UTC).time() == dt.time(0) == end.astimezone(dt.UTC).time()
    if whole:
        last = end - dt.timedelta(days=1)
        return when(start) if last.date() <= start.date() else f"{when(start)} – {when(last)}"
    return f"{when(start, time=True)} – {when(end, time=True)}"


def _alert_rows(alerts, stream: Stream, judge: str | None, dimension: str | None) -> list[dict]:
    """The stream's alerts as the page lists them; ``shown``: on the charts of the selected series (the
    judge's own and the stream-wide kinds of its dimension); ``judge``: the judge whose series shows it
    ("" when none does: a judge no longer in the stream, or a stream without judges)."""
    rows = []
    for a in alerts:
        detail = a.detail or {}
        evidence = detail.get("evidence") or {}
        rows.append(
            {
                "alert": a,
                "since": when(a.window_start),
                "since_exact": a.window_start.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "detected": when(detail.get("detected_at")),
                "before": evidence.get("before"),
                "after": evidence.get("after"),
                "shown": a.dimension == dimension and a.judge in ("", judge),
                "judge": (a.judge or judge or "") if (a.judge or judge) in stream.judges else "",
            }
        )
    return rows


def _judge_run_rows(stream: Stream) -> list[dict]:
    """The judges the worker runs, each with its last run's ``status`` (``annotator.streams.services.judging``):
    a capped run's state said once (``capped_line``, why it stopped below the cap in ``cap_why``), the
    note shown only when it says something else."""
    from annotator.counted import counted
    from annotator.streams.services.judging import CAP_CLAUSE

    today = dt.datetime.now(dt.UTC).date().isoformat()
    rows = []
    for config in stream.judge_runs:
        status = config.get("status") or {}
        cap, currency = config.get("max_cost_per_day"), config.get("currency") or ""
        row = {
            **config,
            "cap": cap,
            "currency": currency,
            "status": status,
            "last_run": when(status["at"], time=True) if status.get("at") else "",
        }
        if status.get("capped"):
            waiting = counted(status.get("left") or 0, "trace", "traces")
            # Today's line is written in the template (its apostrophe stays a character there).
            row["capped_today"] = status.get("day") == today
            row["capped_line"] = (
                f"The cap of {status.get('day')} (UTC) was reached: {waiting} waited for the next day."
            )
            row["cap_why"] = (
                f"{status.get('spent_today') or 0:.4f} of {cap or 0:g} {currency} was spent and the estimate of the "
                f"next call would pass the cap {CAP_CLAUSE}."
            )
            if status.get("too_large"):
                shown = ", ".join(status.get("too_large_ids") or [])
                row["too_large_line"] = (
                    f"{counted(status['too_large'], 'trace is', 'traces are')} too large for the cap and "
                    f"not called ({shown})."
                )
        rows.append(row)
    return rows


@require_GET
@researcher_required
def stream_list(request):
    from annotator.streams.selectors import streams_overview

    streams = streams_overview()
    for s in streams:
        s.last_trace_label = when(s.last_trace) if s.last_trace else ""
        s.created_label = when(s.created_at.astimezone(dt.UTC).date().isoformat())  # the day only
        a = s.latest_alert
        s.latest_since = when(a.window_start) if a else ""
        s.latest_judge = (a.judge or (s.judges[0] if s.judges else "")) if a else ""
    return render(request, "streams/list.html", {"streams": streams})


def _charts(stream, series, judge: str, dimension: str) -> dict:
    """The three charts of the selected series: agreement, means, and the detectors' statistics."""
    from annotator.plots import series_svg
    from annotator.streams.selectors import detector_means_cached

    windows = series.windows
    # A calendar window is named by its first day; a count window by its start, to the minute.
    labels = [when(w["start"], time=stream.window_count is not None) for w in windows]
    starts = [w["start"] for w in windows]
    marks = sorted({starts.index(a.window_start) for a in series.alerts if a.window_start in starts})
    bounds = [(w["start"], w["end"]) for w in windows]
    detectors = detector_means_cached(stream, judge, dimension, bounds)
    return {
        "agreement_svg": series_svg(
            labels,
            {
                "judge–human QWK": [_triple(w["agreement"]) for w in windows],
                "human α": [_triple(w["human_alpha"]) for w in windows],
            },
            ylabel="agreement",
            marks=marks,
        ),
        "means_svg": series_svg(
            labels,
            {
                "human mean": [_triple(w["human_mean"]) for w in windows],
                "PPI++": [_triple(w["ppi"]) for w in windows],
                "judge mean": [(w["judge_mean"], None, None) for w in windows],
            },
            ylabel=f"{dimension} (mean)",
            marks=marks,
        ),
        "detector_svg": series_svg(
            labels,
            # Named by the alert kinds (the legend has room for about 20 characters; the text says more).
            {kind: [(mean, None, None) for mean, _ in values] for kind, values in detectors.items()},
            ylabel="per-trace statistic (mean)",
            marks=marks,
        ),
        "detector_means": detectors,
    }


@require_GET
@researcher_required
def stream_page(request, stream_name):
    from annotator.streams.selectors import alerts_of, detection_progress, detector_settings
    from annotator.streams.services.series import series_refresh

    stream = _stream(stream_name)
    settings = detector_settings()
    context = {
        "stream": stream,
        "dimensions": list(stream.batch.rubric_obj.dimension_keys),
        "detector": settings,
        "refresh_delay": django_settings.STREAM_SERIES_REFRESH_DELAY_S,
        "judge_runs": _judge_run_rows(stream),
    }
    judge = dimension = None
    if stream.judges:
        judge, dimension = _choice(request, stream)
        series = series_refresh(stream=stream, judge=judge, dimension=dimension)
        context.update(judge=judge, dimension=dimension, series=series, rows=series_rows(series.windows))
        last = len(series.windows) - 1
        context["windows"] = [
            {
                "label": window_label(
                    w["start"], w["end"], open_end=stream.window_count is not None and i == last
                ),
                "row": row,
                "stale": w.get("stale", False),
                # Why a "—" stands where QWK or α would (too few traces, constant resamples).
                "qwk_withheld": (w.get("agreement") or {}).get("withheld"),
                "alpha_withheld": (w.get("human_alpha") or {}).get("withheld"),
                "human_mean_withheld": (w.get("human_mean") or {}).get("withheld"),
                "ppi_withheld": (w.get("ppi") or {}).get("withheld"),
            }
            for i, (w, row) in enumerate(zip(series.windows, context["rows"]))
        ]
        context["progress"] = detection_progress(
            [w.get("n_human") or 0 for w in series.windows], reference_windows=settings["reference_windows"]
        )
        if series.windows:
            context.update(_charts(stream, series, judge, dimension))
    context["alert_rows"] = _alert_rows(alerts_of(stream), stream, judge, dimension)
    context["shown_alerts"] = sum(1 for r in context["alert_rows"] if r["shown"])
    return render(request, "streams/stream.html", context)


@require_GET
@researcher_required
def stream_series_csv(request, stream_name):
    from annotator.reports.exports.csv_safe import csv_lines
    from annotator.streams.services.series import series_refresh

    stream = _stream(stream_name)
    if not stream.judges:
        raise Http404("This stream has no judges, so no series.")
    judge, dimension = _choice(request, stream)
    series = series_refresh(stream=stream, judge=judge, dimension=dimension)
    response = StreamingHttpResponse(
        csv_lines(CSV_COLUMNS, series_rows(series.windows)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="stream-{stream.name}-{judge}-{dimension}.csv"'
    return response
