"""The stream pages (researchers): the list, one stream's series plotted, and its CSV."""

from __future__ import annotations

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
            ]
        )
    return rows


@require_GET
@researcher_required
def stream_list(request):
    return render(request, "streams/list.html", {"streams": Stream.objects.order_by("name")})


@require_GET
@researcher_required
def stream_page(request, stream_name):
    from annotator.plots import series_svg
    from annotator.streams.services.series import series_refresh

    stream = _stream(stream_name)
    context = {"stream": stream, "dimensions": list(stream.batch.rubric_obj.dimension_keys)}
    if stream.judges:
        judge, dimension = _choice(request, stream)
        series = series_refresh(stream=stream, judge=judge, dimension=dimension)
        # Calendar windows start at midnight UTC: their date says it; count windows start at any time.
        shape = "%Y-%m-%d" if stream.window_count is None else "%Y-%m-%d %H:%M"
        labels = [w["start"].strftime(shape) for w in series.windows]
        starts = [w["start"] for w in series.windows]
        marks = sorted({starts.index(a.window_start) for a in series.alerts if a.window_start in starts})
        context.update(judge=judge, dimension=dimension, series=series, rows=series_rows(series.windows))
        if series.windows:
            context["agreement_svg"] = series_svg(
                labels,
                {
                    "judge–human QWK": [_triple(w["agreement"]) for w in series.windows],
                    "human α": [_triple(w["human_alpha"]) for w in series.windows],
                },
                ylabel="agreement",
                marks=marks,
            )
            context["means_svg"] = series_svg(
                labels,
                {
                    "human mean": [_triple(w["human_mean"]) for w in series.windows],
                    "PPI++": [_triple(w["ppi"]) for w in series.windows],
                    "judge mean": [(w["judge_mean"], None, None) for w in series.windows],
                },
                ylabel=f"{dimension} (mean)",
                marks=marks,
            )
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
