"""A WSGI app for gunicorn worker tests: ``/slow`` holds its thread for ``?s=`` seconds (as a request
waiting on a stalled database does), ``/healthz`` answers at once."""

from __future__ import annotations

import time
from urllib.parse import parse_qs


def app(environ, start_response):
    if environ["PATH_INFO"] == "/slow":
        time.sleep(float(parse_qs(environ.get("QUERY_STRING", "")).get("s", ["3"])[0]))
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
