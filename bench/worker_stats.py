"""gunicorn hooks for bench/annotate_bench.py (``gunicorn -c bench/worker_stats.py``): each worker's
resident memory once it has loaded the app (its start) and after its first request (the URL
configuration and the templates are loaded then), and how many requests it served, by kind. A worker
writes them to ``$BENCH_WORKER_STATS/<pid>.json`` when it exits.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotator_http import rss_mb

_served: Counter[str] = Counter()
_memory: dict[str, float] = {}


def request_kind(path: str) -> str:
    """``rating`` (the next item page, a submit), ``bare`` (the yardstick view) or ``other`` (sign-in)."""
    if path.startswith("/annotate/"):
        return "rating"
    return "bare" if path == "/bench/bare/" else "other"


def post_worker_init(worker) -> None:
    _memory["start"] = rss_mb(os.getpid())


def post_request(worker, req, environ, resp) -> None:
    _served[request_kind(req.path)] += 1
    if "first_request" not in _memory:
        _memory["first_request"] = rss_mb(os.getpid())


def worker_exit(server, worker) -> None:
    folder = os.environ.get("BENCH_WORKER_STATS")
    if folder:
        Path(folder, f"{os.getpid()}.json").write_text(json.dumps({"served": _served, "memory": _memory}))
