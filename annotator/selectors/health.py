"""Whether the database answers, within a bound a load balancer can wait for."""

from __future__ import annotations

import threading

from django.db import DatabaseError, connection

from annotator.db_deadline import deadline_override

_lock = threading.Lock()
_running: tuple[threading.Thread, dict] | None = None


def _probe(outcome: dict) -> None:
    try:
        with deadline_override(outcome["timeout"]), connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        outcome["error"] = None
    except DatabaseError as exc:
        outcome["error"] = type(exc).__name__
    finally:
        connection.close()  # this thread's own connection; the next probe opens a fresh one


def database_problem(*, timeout_s: float) -> str | None:
    """None when the database answered ``SELECT 1`` within ``timeout_s``, else what went wrong.

    The probe runs in a thread of its own (with its own connection), so a database that stalls
    cannot hold the caller past ``timeout_s``. A caller arriving while a probe is under way waits
    for that one instead of starting another, so a stalled database cannot pile up threads.
    """
    global _running
    with _lock:
        if _running is None or not _running[0].is_alive():
            outcome: dict = {"timeout": timeout_s, "error": "Timeout"}
            thread = threading.Thread(target=_probe, args=(outcome,), name="healthz", daemon=True)
            thread.start()
            _running = (thread, outcome)
        thread, outcome = _running
    thread.join(timeout_s)
    return "Timeout" if thread.is_alive() else outcome["error"]
