"""A client-side deadline on database calls: a PostgreSQL server (or a proxy in front of it) that
stalls, rather than refusing, would otherwise hold a request for the whole stall.

``statement_timeout`` is enforced by the server, so it cannot help when the server's replies stop
arriving; TCP keepalives are answered by any proxy that is still up. So one watchdog thread per
process shuts down the socket of a connection whose call has passed its deadline: the blocked
read then fails at once, psycopg raises ``OperationalError`` and the request answers 503 ("nothing
was lost": every write is one transaction, and a cut one is rolled back by the server).

That deadline must outlast the slowest legitimate statement, so on its own it would still hold a
request for tens of seconds in a stall. Hence a second, faster bound for the case where the whole
database stops answering: a call that has waited ``DB_STALL_CHECK_S`` starts a probe (``SELECT 1`` on
a fresh connection, bounded by ``DB_STALL_PROBE_S``). A slow query on a database that answers the
probe goes on; a probe that fails or times out opens this process's breaker: every call waiting on
the database is cut at once, and every new one fails at once, without touching the network, so the
request answers 503 in milliseconds instead of queueing. While the breaker is open, callers start a
new probe now and then; the first one answered closes it.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import socket
import threading
import time
from collections.abc import Iterator

_local = threading.local()


class _Watchdog:
    def __init__(self):
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, bool]] = []  # (when, guard id, a probe check rather than a cut)
        self._active: dict[int, int] = {}  # guard id -> socket file descriptor
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self.fired = 0  # sockets shut down, for tests and logs

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="db-deadline", daemon=True)
            self._thread.start()

    @contextlib.contextmanager
    def guard(self, fd: int, seconds: float, check_after: float = 0) -> Iterator[None]:
        """Shut the socket down after ``seconds``; after ``check_after`` (0: never), probe the database."""
        ident = next(self._ids)
        with self._cond:
            self._start()
            self._active[ident] = fd
            now = time.monotonic()
            heapq.heappush(self._heap, (now + seconds, ident, False))
            if check_after and check_after < seconds:
                heapq.heappush(self._heap, (now + check_after, ident, True))
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
                due, ident, suspect = self._heap[0]
                left = due - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                heapq.heappop(self._heap)
                if suspect:  # still waiting: is the database answering anyone?
                    stall.check()
                    continue
                fd = self._active.pop(ident)
                # Under the lock: the calling thread cannot close (and the process cannot reuse) the
                # descriptor before it has left guard().
                _shut_down(fd)
                self.fired += 1

    def cut_all(self) -> int:
        """Shut down the socket of every call waiting now (the database was found stalled)."""
        with self._cond:
            fds = list(self._active.values())
            self._active.clear()
            for fd in fds:
                _shut_down(fd)
            self.fired += len(fds)
            return len(fds)


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


def guarded(connection, default_seconds: float, check_after_s: float = 0):
    """A context manager bounding one call on ``connection`` (a Django database wrapper) by its deadline,
    and probing the database once it has waited ``check_after_s`` (0: never); a no-op when the deadline
    is 0 or the connection is not open."""
    seconds = getattr(_local, "seconds", None) or default_seconds
    raw = getattr(connection, "connection", None)
    if not seconds or raw is None or getattr(raw, "closed", True):
        return contextlib.nullcontext()
    try:
        fd = raw.fileno()
    except Exception:  # noqa: BLE001 - a connection too broken to name its socket is left to psycopg
        return contextlib.nullcontext()
    return watchdog.guard(fd, seconds, check_after_s)


class _Probe:
    """One ``SELECT 1`` on a fresh connection; ``done`` is set by its deadline at the latest."""

    def __init__(self, timeout: float):
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.timeout = timeout
        self.done = threading.Event()
        self.error: str | None = "Timeout"
        self.inner: threading.Thread | None = None

    def result(self, wait_s: float) -> str | None:
        """None when the database answered, else what went wrong; waits at most ``wait_s``."""
        self.done.wait(max(0.0, min(self.deadline - time.monotonic(), wait_s)))
        return self.error if self.done.is_set() else "Timeout"


class _Stall:
    """This process's view of whether the database answers at all, shared by every thread."""

    REPROBE_AFTER_S = 0.5  # while open, at most one probe started per this many seconds

    def __init__(self):
        self._lock = threading.Lock()
        self._probe: _Probe | None = None
        self.open_reason: str | None = None  # not None: the breaker is open
        self.trips = 0  # for tests and logs

    def probe(self, timeout: float | None = None) -> _Probe:
        """The probe under way, or a new one. A probe whose connection still hangs past its deadline is
        reused rather than joined by another, so a stall cannot pile up threads."""
        with self._lock:
            current = self._probe
            if current is not None and (
                not current.done.is_set()
                or (current.inner is not None and current.inner.is_alive())
                or (self.open_reason and time.monotonic() - current.started < self.REPROBE_AFTER_S)
            ):
                return current
            if timeout is None:
                from django.conf import settings

                timeout = getattr(settings, "DB_STALL_PROBE_S", 2)
            probe = self._probe = _Probe(timeout)
        threading.Thread(target=self._run, args=(probe,), name="db-probe", daemon=True).start()
        return probe

    def check(self) -> None:
        """Start a probe unless one is under way (the watchdog calls this; it must not block)."""
        self.probe()

    def refuse(self) -> bool:
        """True when a call must fail at once; starts a new probe now and then, so the breaker closes soon
        after the database answers again."""
        if self.open_reason is None or getattr(_local, "probing", False):
            return False
        self.probe()
        return self.open_reason is not None

    def connect(self, open_connection, check_after: float):
        """``open_connection()``'s connection, or None when the database was found stalled meanwhile.

        libpq's connect timeout is whole seconds, at least 2 (5 by default here), so a connection opened
        just as a stall begins would hold its request past the breaker. It is opened in a thread of its
        own instead: the caller waits for it, starts a probe once it has waited ``check_after`` and leaves
        when the breaker opens; a connection that arrives after its caller left is closed."""
        if getattr(_local, "probing", False):
            return open_connection()
        outcome: dict = {}
        done = threading.Event()
        lock = threading.Lock()

        def attempt() -> None:
            try:
                outcome["connection"] = open_connection()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                outcome["error"] = exc
            with lock:
                done.set()
                if outcome.get("abandoned") and "connection" in outcome:
                    outcome["connection"].close()

        threading.Thread(target=attempt, name="db-connect", daemon=True).start()
        if not done.wait(check_after):
            self.probe()
            while not done.wait(0.05):
                with lock:
                    if self.open_reason is not None and not done.is_set():
                        outcome["abandoned"] = True
                        return None
        if "error" in outcome:
            raise outcome["error"]
        return outcome["connection"]

    def _run(self, probe: _Probe) -> None:
        probe.inner = threading.Thread(target=_select_one, args=(probe,), name="db-probe-query", daemon=True)
        probe.inner.start()
        probe.inner.join(probe.timeout)
        if probe.inner.is_alive():
            probe.error = "Timeout"
        probe.done.set()
        if probe.error is None:
            self.open_reason = None
        else:
            self.trip(probe.error)

    def trip(self, reason: str) -> None:
        first = self.open_reason is None
        self.open_reason = reason
        if first:
            self.trips += 1
        watchdog.cut_all()

    def reset(self) -> None:
        """Forget the breaker's state (tests)."""
        with self._lock:
            self.open_reason, self._probe = None, None


def _select_one(probe: _Probe) -> None:
    from django.db import DatabaseError, connections

    _local.probing = True  # the breaker does not refuse its own probe
    db = connections.create_connection("default")  # a fresh connection, not this thread's usual one
    if db.vendor == "postgresql":  # libpq's connect timeout: whole seconds, at least 2
        options = {
            **(db.settings_dict.get("OPTIONS") or {}),
            "connect_timeout": max(2, math.ceil(probe.timeout)),
        }
        db.settings_dict = {**db.settings_dict, "OPTIONS": options}  # a copy: the settings stay as they are
    try:
        with deadline_override(probe.timeout), db.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        if time.monotonic() <= probe.deadline:
            probe.error = None
    except DatabaseError as exc:
        probe.error = type(exc).__name__
    finally:
        try:
            db.close()
        except DatabaseError:
            pass


stall = _Stall()
