"""A client-side deadline on database calls: a PostgreSQL server (or a proxy in front of it) that
stalls, rather than refusing, would otherwise hold a request for the whole stall.

``statement_timeout`` is enforced by the server, so it cannot help when the server's replies stop
arriving; TCP keepalives are answered by any proxy that is still up. So one watchdog thread per
process shuts down the socket of a connection whose call has passed its deadline: the blocked
read then fails at once, psycopg raises ``OperationalError`` and the request answers 503 ("nothing
was lost": every write is one transaction, and a cut one is rolled back by the server).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator

_local = threading.local()


class _Watchdog:
    def __init__(self):
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._active: dict[int, int] = {}  # guard id -> socket file descriptor
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self.fired = 0  # sockets shut down, for tests and logs

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="db-deadline", daemon=True)
            self._thread.start()

    @contextlib.contextmanager
    def guard(self, fd: int, seconds: float) -> Iterator[None]:
        ident = next(self._ids)
        with self._cond:
            self._start()
            self._active[ident] = fd
            heapq.heappush(self._heap, (time.monotonic() + seconds, ident))
            if (
                self._heap[0][1] == ident
            ):  # the watchdog sleeps until the earliest deadline: wake it only for a new one
                self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._active.pop(ident, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._active:
                    heapq.heappop(self._heap)  # finished in time
                if not self._heap:
                    self._cond.wait()
                    continue
                due, ident = self._heap[0]
                left = due - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                heapq.heappop(self._heap)
                fd = self._active.pop(ident)
                # Under the lock: the calling thread cannot close (and the process cannot reuse) the
                # descriptor before it has left guard().
                _shut_down(fd)
                self.fired += 1


def _shut_down(fd: int) -> None:
    """Shut the socket down (both ways) through a duplicate descriptor; psycopg's own stays open
    and reports the broken connection on its next read."""
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


watchdog = _Watchdog()


@contextlib.contextmanager
def deadline_override(seconds: float) -> Iterator[None]:
    """Database calls of this thread use ``seconds`` as their deadline inside the block (e.g. /healthz)."""
    before = getattr(_local, "seconds", None)
    _local.seconds = seconds
    try:
        yield
    finally:
        _local.seconds = before


def guarded(connection, default_seconds: float):
    """A context manager bounding one call on ``connection`` (a Django database wrapper) by its deadline;
    a no-op when the deadline is 0 or the connection is not open."""
    seconds = getattr(_local, "seconds", None) or default_seconds
    raw = getattr(connection, "connection", None)
    if not seconds or raw is None or getattr(raw, "closed", True):
        return contextlib.nullcontext()
    try:
        fd = raw.fileno()
    except Exception:  # noqa: BLE001 - a connection too broken to name its socket is left to psycopg
        return contextlib.nullcontext()
    return watchdog.guard(fd, seconds)
