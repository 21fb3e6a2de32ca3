"""A database stall under load: simulated annotators rate on two app servers while PostgreSQL stops answering.

Two gunicorn app servers (2 workers each) on 127.0.0.1 reach a fresh PostgreSQL database through a
TCP proxy (tests/stall_proxy.py) that, at ``--stall-at`` seconds into the timed run, stops forwarding
for ``--stall`` seconds: every connection stays open and nothing comes back, as behind a hung proxy
or a network that drops traffic. N annotators (bench/load_faults.py's browsers: after a 5xx or a
connection error they send the same form again) are spread over both servers, and one prober per
server asks ``/healthz`` every half second, as a load balancer does. Afterwards the script reads
the database and prints, for the requests that overlapped the stall: the slowest answer, how many
took over 5 s, how many were 503 with Retry-After, the slowest /healthz answer per server, and
submissions acknowledged but not stored (lost).

    .venv/bin/python bench/load_stall.py --compare            # sync workers vs the shipped ThreadWorker
    .venv/bin/python bench/load_stall.py --clients 60 --seconds 36 --stall-at 10 --stall 15
    .venv/bin/python bench/load_stall.py --clients 200 --seconds 40 --stall-at 10 --stall 20 --queue-deadline 0

Every annotator logs in before the timed run, at most ``--login-concurrency`` at a time (8), as
workers of a study arrive over a while: a login hashes the password (PBKDF2, about 0.25 s of a core by
design), so 200 at once is a login storm that fills every request thread for a minute or more, and a
stall started inside it measures the storm. ``--login-storm`` keeps the earlier behaviour (every
annotator logs in at the same moment, each login request bounded only by the 30 s client timeout)
for comparison. The timed run starts when all are logged in, with everybody's first page at once, so
the stall should begin ``--stall-at`` 5 s or more into it (10 by default), when all are rating. The
answers over 5 s are split into those sent before the stall began and those sent during it; the
login rows say how slow logging in was and how many login requests ran into the client's timeout.

Each request carries ``X-Request-Start: t=<seconds>`` stamped as it is sent, as the shipped nginx
config does, and the servers run with ``PROXY_COUNT=1`` so the app reads it;
``--queue-deadline S`` sets ``REQUEST_QUEUE_DEADLINE_S`` (0: off; unset: the app's default).

``--compare`` runs the same load twice: "before" is gunicorn's sync worker with the stall check off
(``DB_STALL_CHECK_S=0`` and ``REQUEST_QUEUE_DEADLINE_S=0``, the earlier code path: only the per-call
deadline), "after" is ``make web``'s
worker (``annotator.gunicorn_workers.ThreadWorker --threads 4``) with the default stall check.
PostgreSQL: 127.0.0.1:5432 as postgres (trust); the database of --pg-url is dropped and re-created.
Ports: the first free ones of ``BENCH_PORTS`` (e.g. "8170-8179"), else any. Bounded: at most 200
annotators and 600 s; every request has a 30 s timeout. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from annotator_http import (
    ROOT,
    VENV_BIN,
    Annotator,
    free_port,
    postgres_database_name,
    recreate_postgres,
    server_env,
    setup_database,
    start_gunicorn,
)
from load_faults import Browser, Shared
from load_faults_report import percentile

sys.path.insert(0, str(ROOT))
from tests.stall_proxy import StallingProxy  # noqa: E402 - the checkout's root is on the path only now

ANSWER_BOUND_S = 5.0  # every request answered within this during a stall
HEALTHZ_BOUND_S = 3.0  # docs/faults.md: /healthz answers 503 within 3 s
WARM_UP_S = 5.0  # every annotator is rating by then (the run starts with all their first pages at once)
MODES = {
    "before": {
        "worker": ["--worker-class", "annotator.gunicorn_workers.SyncWorker"],
        "env": {"DB_STALL_CHECK_S": "0", "REQUEST_QUEUE_DEADLINE_S": "0"},
    },
    "after": {
        "worker": ["--worker-class", "annotator.gunicorn_workers.ThreadWorker", "--threads", "4"],
        "env": {},
    },
}


class StampedAnnotator(Annotator):
    """A browser behind the shipped nginx: every request says when it arrived (``X-Request-Start``)."""

    def extra_headers(self) -> dict[str, str]:
        return {"X-Request-Start": f"t={time.time():.3f}"}


class ArrivingBrowser(Browser):
    """An annotator whose login waits for one of ``gate``'s places (None: no limit, a login storm)."""

    def __init__(self, *args, gate: threading.Semaphore | None, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = StampedAnnotator(self.http.port, self.username, timeout=30)
        self.gate = gate
        self.logged_in_at: float | None = None
        self.login_started: float | None = None

    def login(self) -> bool:
        if self.gate is None or self.logged_in_at is not None:
            return self._timed_login()
        with self.gate:
            return self._timed_login()

    def _timed_login(self) -> bool:
        self.login_started = self.login_started or time.monotonic()
        ok = super().login()
        if ok and self.logged_in_at is None:
            self.logged_in_at = time.monotonic()
        return ok


@dataclass
class Probe:
    server: int
    start: float
    end: float
    status: int | None


def probe_health(port: int, server: int, stop: threading.Event, out: list[Probe], every: float = 0.5) -> None:
    while not stop.is_set():
        start = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("GET", "/healthz")
            status = conn.getresponse().status
        except (OSError, http.client.HTTPException):
            status = None
        finally:
            conn.close()
        out.append(Probe(server, start, time.monotonic(), status))
        stop.wait(max(0.0, every - (time.monotonic() - start)))


def run_stall(
    *,
    pg_url: str,
    mode: str,
    clients: int,
    seconds: float,
    stall_at: float,
    stall_s: float,
    items: int,
    workers: int = 2,
    login_concurrency: int | None = 8,
    queue_deadline: float | None = None,
) -> dict:
    url = recreate_postgres(pg_url)
    base, _ = url.split("?", 1)[0].rsplit("/", 1)
    env = server_env(url)
    batch_id = setup_database(env, clients, items, k=3)
    proxy = StallingProxy(("127.0.0.1", 5432), port=free_port())
    through = {
        **env,
        **MODES[mode]["env"],
        "PROXY_COUNT": "1",  # the app reads X-Request-Start only behind a proxy, as the bench's clients act
        **({} if queue_deadline is None else {"REQUEST_QUEUE_DEADLINE_S": f"{queue_deadline:g}"}),
        "DATABASE_URL": f"{base.rsplit(':', 1)[0]}:{proxy.port}/{postgres_database_name(url)}",
    }
    logs, masters, ports = [], [], []
    try:
        for _ in range(2):
            log = tempfile.NamedTemporaryFile("w+", suffix=".log", prefix="load_stall_", delete=False)
            log.close()
            logs.append(log.name)
            port = free_port()
            masters.append(
                start_gunicorn(
                    through, port, workers, *MODES[mode]["worker"], "--timeout", "60", log_path=log.name
                )
            )
            ports.append(port)
        shared = Shared()

        def go() -> None:
            shared.deadline = time.monotonic() + seconds

        start_line = threading.Barrier(clients + 1, action=go)
        gate = threading.Semaphore(login_concurrency) if login_concurrency else None
        browsers = [
            ArrivingBrowser(
                ports[i % 2],
                f"bench{i}",
                batch_id,
                start_line,
                shared,
                seed=1000 + i,
                think=(0.2, 1.0),
                double_submit=0.03,
                gate=gate,
            )
            for i in range(clients)
        ]
        login_began = time.monotonic()
        for b in browsers:
            b.start()
        start_line.wait(timeout=400)
        t0 = time.monotonic()
        stop, probes = threading.Event(), []
        probers = [
            threading.Thread(target=probe_health, args=(p, n, stop, probes), daemon=True)
            for n, p in enumerate(ports)
        ]
        for p in probers:
            p.start()
        time.sleep(max(0.0, t0 + stall_at - time.monotonic()))
        stalled = time.monotonic()
        proxy.stall()
        time.sleep(stall_s)
        proxy.resume()
        resumed = time.monotonic()
        for b in browsers:
            b.join(timeout=max(1.0, shared.deadline - time.monotonic()) + 35)
        stop.set()
        for p in probers:
            p.join(timeout=35)
    finally:
        for master in masters:
            master.terminate()
        for master in masters:
            try:
                master.wait(timeout=20)
            except subprocess.TimeoutExpired:
                master.kill()
        proxy.close()
    out = subprocess.run(
        [str(VENV_BIN / "python"), str(ROOT / "bench" / "load_faults.py"), "--_check", str(batch_id)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    state = json.loads(out.strip().splitlines()[-1])
    stored = {(u, pk) for u, pk in state["stored"]}
    result = summarise(
        mode, shared.records, probes, stalled, resumed, t0, shared, stored, state, clients, stall_s, logs
    )
    logins = [b.logged_in_at - login_began for b in browsers if b.logged_in_at is not None]
    result.update(
        logins="storm" if not login_concurrency else f"{login_concurrency} at a time",
        queue_deadline="default" if queue_deadline is None else f"{queue_deadline:g}",
        logged_in=len([b for b in browsers if b.logged_in_at is not None and b.logged_in_at <= t0]),
        all_logged_in_s=max(logins, default=float("nan")),
        load=" ".join(f"{x:.1f}" for x in os.getloadavg()),
    )
    return result


def summarise(
    mode, records, probes, stalled, resumed, t0, shared, stored, state, clients, stall_s, logs
) -> dict:
    during = [r for r in records if r.kind != "login" and r.end >= stalled and r.start <= resumed]
    took = [r.end - r.start for r in during]
    slow = [r for r in during if r.end - r.start > ANSWER_BOUND_S]
    health = {}
    for server in (0, 1):
        mine = [p for p in probes if p.server == server and p.end >= stalled and p.start <= resumed]
        health[server] = {
            "max_s": max((p.end - p.start for p in mine), default=float("nan")),
            "over_3s": sum(1 for p in mine if p.end - p.start > HEALTHZ_BOUND_S or p.status is None),
            "probes": len(mine),
            "503": sum(1 for p in mine if p.status == 503),
        }
    recovered = [p.end - resumed for p in probes if p.end >= resumed and p.status == 200]
    log_text = ""
    for path in logs:
        with open(path, errors="replace") as f:
            log_text += f.read()
    return {
        "mode": mode,
        "clients": clients,
        "stall_s": stall_s,
        "during": len(during),
        "max_s": max(took, default=float("nan")),
        "p95_s": percentile(took, 0.95),
        "over_5s": len(slow),
        "over_5s_sent_before": sum(1 for r in slow if r.start < stalled),
        "over_5s_sent_during": sum(1 for r in slow if r.start >= stalled),
        "slowest_sent_before_s": max((r.end - r.start for r in during if r.start < stalled), default=0.0),
        "slowest_sent_during_s": max((r.end - r.start for r in during if r.start >= stalled), default=0.0),
        "sent_before": sum(1 for r in during if r.start < stalled),
        "503_retry_after": sum(1 for r in during if r.status == 503 and r.retry_after),
        "other_5xx": sum(
            1 for r in during if r.status and r.status >= 500 and not (r.status == 503 and r.retry_after)
        ),
        "connection_errors": sum(1 for r in during if r.status is None),
        "healthz": health,
        "healthz_200_after_s": min(recovered, default=float("nan")),
        "acknowledged": len(shared.acked),
        "stored": len(stored),
        "lost": len(shared.acked - stored),
        "duplicates": state["duplicates"],
        "over_k": state["over_k"],
        "post_retries": shared.post_retries,
        "worker_timeouts": log_text.count("WORKER TIMEOUT"),
        "unexpected": shared.unexpected[:5],
        "n_unexpected": len(shared.unexpected),
        "requests": len([r for r in records if r.kind != "login"]),
        "login_timeouts": sum(1 for r in records if r.kind == "login" and r.status is None),
        "login_503": sum(1 for r in records if r.kind == "login" and r.status == 503),
        "login_slowest_s": max((r.end - r.start for r in records if r.kind == "login"), default=0.0),
        "statuses": {
            str(k): sum(1 for r in records if (r.status or 0) == k)
            for k in sorted({r.status or 0 for r in records})
        },
    }


def failed_checks(r: dict) -> list[str]:
    failed = [
        f"{k} = {r[k]}"
        for k in ("over_5s", "lost", "duplicates", "over_k", "connection_errors", "other_5xx")
        if r[k]
    ]
    failed += [
        f"healthz on server {s + 1}: {h['over_3s']} probes over 3 s"
        for s, h in r["healthz"].items()
        if h["over_3s"]
    ]
    if not r["acknowledged"]:
        failed.append("nothing was acknowledged")
    return failed


ROWS = [
    ("logins", lambda r: r["logins"]),
    ("REQUEST_QUEUE_DEADLINE_S", lambda r: r["queue_deadline"]),
    ("logged in before the run", lambda r: f"{r['logged_in']} of {r['clients']}"),
    ("last login done, s", lambda r: f"{r['all_logged_in_s']:.1f}"),
    ("login answers: slowest, s", lambda r: f"{r['login_slowest_s']:.1f}"),
    ("login requests timed out / 503", lambda r: f"{r['login_timeouts']} / {r['login_503']}"),
    ("load average at the end", lambda r: r["load"]),
    ("requests overlapping the stall", lambda r: r["during"]),
    ("  of which sent before it", lambda r: r["sent_before"]),
    ("slowest answer, s", lambda r: f"{r['max_s']:.2f}"),
    (
        "  sent before / during the stall, s",
        lambda r: f"{r['slowest_sent_before_s']:.2f} / {r['slowest_sent_during_s']:.2f}",
    ),
    ("p95 answer, s", lambda r: f"{r['p95_s']:.2f}"),
    ("answers over 5 s", lambda r: r["over_5s"]),
    (
        "  sent before / during the stall",
        lambda r: f"{r['over_5s_sent_before']} / {r['over_5s_sent_during']}",
    ),
    ("503 with Retry-After", lambda r: r["503_retry_after"]),
    ("other 5xx / connection errors", lambda r: f"{r['other_5xx']} / {r['connection_errors']}"),
    (
        "/healthz slowest, server 1 / 2, s",
        lambda r: " / ".join(f"{h['max_s']:.2f}" for h in r["healthz"].values()),
    ),
    (
        "/healthz probes over 3 s or unanswered",
        lambda r: " / ".join(str(h["over_3s"]) for h in r["healthz"].values()),
    ),
    ("/healthz 200 again, s after the stall", lambda r: f"{r['healthz_200_after_s']:.2f}"),
    ("submissions acknowledged / stored", lambda r: f"{r['acknowledged']} / {r['stored']}"),
    ("ratings lost", lambda r: r["lost"]),
    ("duplicates / items over k", lambda r: f"{r['duplicates']} / {r['over_k']}"),
    ("gunicorn WORKER TIMEOUTs", lambda r: r["worker_timeouts"]),
]


def print_table(results: list[dict]) -> None:
    r0 = results[0]
    print(
        f"\nDatabase stall of {r0['stall_s']:g} s, {r0['clients']} annotators on 2 app servers × 2 gunicorn workers"
    )
    width = max(len(name) for name, _ in ROWS)
    cell = max(12, *(len(str(value(r))) for r in results for _, value in ROWS))
    print(f"| {'':<{width}} | " + " | ".join(f"{r['mode']:>{cell}}" for r in results) + " |")
    cell = max(12, *(len(str(value(r))) for r in results for _, value in ROWS))
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * (cell + 2) for _ in results) + "|")
    for name, value in ROWS:
        print(f"| {name:<{width}} | " + " | ".join(f"{value(r)!s:>{cell}}" for r in results) + " |")
    for r in results:
        for note in r["unexpected"]:
            print(f"  {r['mode']}: unexpected: {note}")
        failed = failed_checks(r)
        print(f"{r['mode']}: " + ("all checks held" if not failed else "FAILED: " + ", ".join(failed)))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/stall_load")
    parser.add_argument("--mode", choices=sorted(MODES), default="after")
    parser.add_argument("--compare", action="store_true", help="run 'before' and then 'after'")
    parser.add_argument("--clients", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=36)
    parser.add_argument("--stall-at", type=float, default=10)
    parser.add_argument("--stall", type=float, default=15)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument(
        "--login-concurrency", type=int, default=8, help="logins under way at once before the run (8)"
    )
    parser.add_argument(
        "--login-storm", action="store_true", help="every annotator logs in at once (the earlier bench)"
    )
    parser.add_argument(
        "--queue-deadline", type=float, help="REQUEST_QUEUE_DEADLINE_S for the servers (0: off)"
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.seconds > 600 or args.clients > 200 or args.stall_at + args.stall > args.seconds:
        parser.error("bounded: at most 600 s and 200 annotators, and the stall ends within the run")
    if args.stall and args.stall_at < WARM_UP_S:
        print(
            f"note: the stall begins {args.stall_at:g} s into the run, while the first pages of all "
            f"{args.clients} annotators (sent at once) may still be queued: that measures the start, not the stall"
        )
    results = [
        run_stall(
            pg_url=args.pg_url,
            mode=mode,
            clients=args.clients,
            seconds=args.seconds,
            stall_at=args.stall_at,
            stall_s=args.stall,
            items=args.items,
            login_concurrency=None if args.login_storm else args.login_concurrency,
            queue_deadline=args.queue_deadline,
        )
        for mode in (["before", "after"] if args.compare else [args.mode])
    ]
    print_table(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 1 if failed_checks(results[-1]) else 0


if __name__ == "__main__":
    sys.exit(main())
