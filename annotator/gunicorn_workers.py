"""gunicorn workers whose own refusals under ``/api/`` are problem details, like every other API error.

gunicorn answers a request line or headers over its limits (414, 431) itself, before the app sees
the request, with a small HTML page. These workers remember the first bytes each request arrived
with, and answer such a refusal of an ``/api/`` request as ``application/problem+json`` (RFC 9457);
every other refusal, and every other path, is gunicorn's own.

``ThreadWorker`` (``make web``: ``--worker-class annotator.gunicorn_workers.ThreadWorker --threads 4``)
also answers ``/healthz`` on two threads of its own, outside the queue of requests waiting for the
request threads, so a load balancer's probe is answered within ``HEALTHZ_TIMEOUT_S`` even while every
request thread waits on a stalled database (docs/faults.md). ``SyncWorker`` is the one-request-at-a-time
worker with the same refusals.
"""

from __future__ import annotations

import json
import re
import select
import selectors
import socket
import time
from concurrent import futures
from functools import partial
from http import HTTPStatus

from gunicorn.http import parser as gunicorn_parser
from gunicorn.http.errors import LimitRequestHeaders, LimitRequestLine
from gunicorn.http.message import Request
from gunicorn.util import write_nonblock
from gunicorn.workers import gthread, sync

HEAD_BYTES = 300  # enough of the request line to tell an /api/ path and name it
_API_TARGET = re.compile(rb"\A(?:\r\n)?[A-Za-z]+ (/api/[^ \r\n]{0,200})")
DETAILS = {
    414: "The request line is longer than this server reads; send long input in the JSON body of a POST "
    "(item ids, filters) instead of the query string.",
    431: "The request's headers are larger than this server reads; send only the Authorization header "
    "this API needs (Bearer and a token of about 50 characters), without large cookies.",
}


class _RememberingRequest(Request):
    """gunicorn's request, keeping the first bytes it read, so a refusal can tell where it was going."""

    def read_into(self, unreader, buf, stop=False):
        super().read_into(unreader, buf, stop)
        if not getattr(self, "head", None):
            self.head = bytes(buf[:HEAD_BYTES])

    def parse(self, unreader):
        try:
            return super().parse(unreader)
        except (LimitRequestLine, LimitRequestHeaders) as exc:
            exc.request_head = getattr(self, "head", b"")
            raise


def api_problem(exc: Exception) -> bytes | None:
    """The whole HTTP response for a refusal of an /api/ request over gunicorn's limits, else None."""
    status = (
        414 if isinstance(exc, LimitRequestLine) else 431 if isinstance(exc, LimitRequestHeaders) else None
    )
    match = _API_TARGET.match(getattr(exc, "request_head", b""))
    if status is None or match is None:
        return None
    body = json.dumps(
        {
            "type": "about:blank",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": DETAILS[status],
            "instance": match.group(1).decode("ascii", "replace"),
        }
    ).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nConnection: close\r\n"
        f"Content-Type: application/problem+json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class _ProblemRefusals:
    def init_process(self):
        gunicorn_parser.RequestParser.mesg_class = _RememberingRequest  # this worker process's parser
        super().init_process()

    def handle_error(self, req, client, addr, exc):
        response = api_problem(exc)
        if response is None:
            return super().handle_error(req, client, addr, exc)
        self.log.warning("Invalid request from ip=%s: %s", addr[0] if addr else "?", exc)
        try:
            write_nonblock(client, response)
        except Exception:  # noqa: BLE001 - the client went away; gunicorn ignores this too
            self.log.debug("Failed to send error message.")
        return None


class SyncWorker(_ProblemRefusals, sync.SyncWorker):
    pass


HEALTH_REQUESTS = (b"GET /healthz", b"HEAD /healthz")
HEALTH_THREADS = 2


def _readable(sock) -> bool:
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def asks_for_health(sock) -> bool:
    """Whether the bytes waiting on ``sock`` (peeked, not read) start a ``/healthz`` request."""
    try:
        head = sock.recv(len(HEALTH_REQUESTS[1]) + 1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (OSError, ValueError):  # nothing there yet, or TLS (no peeking through it): the usual queue
        return False
    return any(
        head.startswith(request) and head[len(request) :][:1] in (b"", b" ", b"?", b"/")
        for request in HEALTH_REQUESTS
    )


class ThreadWorker(_ProblemRefusals, gthread.ThreadWorker):
    """gunicorn's gthread worker, with /healthz answered on threads of its own."""

    def init_process(self):
        self.health_pool = futures.ThreadPoolExecutor(
            max_workers=HEALTH_THREADS, thread_name_prefix="healthz"
        )
        super().init_process()

    def enqueue_req(self, conn):
        if not conn.initialized and not conn.data_ready and not _readable(conn.sock):
            # A new connection whose request has not arrived yet: wait on the poller (gunicorn's own
            # pending list, closed after --keep-alive seconds of silence) so it can be routed by its path.
            conn.sock.setblocking(False)
            conn.timeout = time.monotonic() + self.cfg.keepalive
            self.pending_conns.append(conn)
            self.poller.register(
                conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
            )
            return
        pool = self.health_pool if asks_for_health(conn.sock) else self.tpool
        fs = pool.submit(self.handle, conn)
        fs.add_done_callback(lambda fut: self.method_queue.defer(self.finish_request, conn, fut))

    def handle_quit(self, sig, frame):
        self.health_pool.shutdown(wait=False)
        super().handle_quit(sig, frame)
