"""The printed part of bench/load_faults.py: checks, the table, the timeline, the server log summary."""

from __future__ import annotations

import os
import re

RESTART_GRACE_S = 3.0  # after pg_ctlcluster returns, requests already waiting may still fail


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[max(0, int(round(q * len(values))) - 1)]


def timeline(records: list, t0: float, seconds: float, window, step: float = 5.0) -> list[tuple]:
    """Per ``step`` seconds of the run: requests answered, 5xx, connection errors, p95 ms."""
    rows = []
    for i in range(int((seconds + step - 1) // step)):
        lo, hi = t0 + i * step, t0 + (i + 1) * step
        part = [r for r in records if lo <= r.end < hi]
        answered = [
            r.end - r.start for r in part if r.status is not None and r.status < 500 and r.kind != "login"
        ]
        rows.append(
            (
                i * step,
                len(part),
                sum(1 for r in part if r.status and r.status >= 500),
                sum(1 for r in part if r.status is None),
                percentile(answered, 0.95) * 1000,
            )
        )
    return rows


def server_log_summary(path: str) -> dict:
    """Exceptions (the last of each chain) and gunicorn events in the server's error log, by kind."""
    counts: dict[str, int] = {}
    chunks: list[list[str]] = []
    for line in open(path, errors="replace").read().splitlines():
        if line.startswith("[") and "] [" in line:  # gunicorn's own log line
            if "WORKER TIMEOUT" in line or "SIGKILL" in line or "Booting worker" in line:
                event = "gunicorn: " + re.sub(r"\d+", "N", line.split("] ", 2)[-1])
                counts[event] = counts.get(event, 0) + 1
        elif re.match(r"^[A-Z][A-Za-z ]+: /", line):  # Django: "Internal Server Error: /path"
            chunks.append([])
        elif chunks:
            chunks[-1].append(line)
    skip = ("Traceback", "During handling", "The above exception")
    for chunk in chunks:
        lines = [x for x in chunk if x.strip() and not x[0].isspace() and not x.startswith(skip)]
        if lines:
            counts[lines[-1][:140]] = counts.get(lines[-1][:140], 0) + 1
    os.unlink(path)
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:10])


def failed_checks(r: dict) -> list[str]:
    checks = {
        "lost": r["lost"],
        "duplicates": r["duplicates"],
        "over_k": r["over_k"],
        "counter_mismatch": r["counter_mismatch"],
        "http_5xx_outside_window": r["http_5xx_outside_window"],
    }
    failed = [f"{name} = {value}" for name, value in checks.items() if value]
    if r["acknowledged"] == 0:
        failed.append("nothing was acknowledged")
    return failed


def print_report(r: dict) -> None:
    f = r["faults"]
    print(
        f"\nLoad with faults: {r['database']}, gunicorn {r['workers']} sync workers, {r['clients']} annotators, "
        f"{r['seconds']:g} s (wall {r['wall']:.1f} s), {r['items']} items × k={r['k']}, {os.cpu_count()} CPUs"
    )
    if "killed" in f:
        respawn = (
            f"respawned after {f['respawned'] - f['killed'][1]:.1f} s"
            if "respawned" in f
            else "respawn not seen"
        )
        print(f"  fault 1: gunicorn worker {f['killed'][0]} SIGKILLed at {f['killed'][1]:.1f} s ({respawn})")
    if "restart" in f:
        start, end, cluster, code, err = f["restart"]
        print(
            f"  fault 2: PostgreSQL {cluster} restarted {start:.1f}–{end:.1f} s (exit {code}{'; ' + err if err else ''});"
            f" restart window counted to {end + RESTART_GRACE_S:.1f} s"
        )
    if not f:
        print("  no faults")
    print(
        f"  before the timed run: {r['clients']} logins in {r['login_seconds']:.1f} s "
        f"(p95 {r['login_p95_ms']:.0f} ms; PBKDF2 password hashing)"
    )
    rows = [
        ("submissions acknowledged (302 to a POST)", r["acknowledged"]),
        ("stored (annotations in the batch)", r["stored"]),
        ("acknowledged but not stored: LOST", r["lost"]),
        ("stored, acknowledgement never received", r["stored_unacknowledged"]),
        ("refused with a message (not stored, user told)", r["refused"]),
        ("duplicates (same item and annotator)", r["duplicates"]),
        ("items over k", r["over_k"]),
        ("items with k annotations", r["items_full"]),
        ("item counters that disagree with rows", r["counter_mismatch"]),
        ("POSTs sent again after an error", r["post_retries"]),
        ("acknowledged forms sent again (double click)", r["double_submits"]),
        ("pages saying 'already submitted'", r["already_seen"]),
        ("requests in the timed run", r["requests"]),
        ("acknowledged submissions per second", f"{r['acks_per_s']:.1f}"),
        ("5xx inside the restart window", r["http_5xx_in_window"]),
        ("5xx outside the restart window", r["http_5xx_outside_window"]),
        ("5xx by status", ", ".join(f"{k}: {v}" for k, v in r["statuses_5xx"].items()) or "-"),
        ("connection errors (killed worker, restart)", r["connection_errors"]),
        ("latency p50 ms (GET next / POST submit)", f"{r['p50_ms']:.0f}"),
        ("latency p95 ms (GET next / POST submit)", f"{r['p95_ms']:.0f}"),
        ("latency p95 ms outside the restart window", f"{r['p95_outside_window_ms']:.0f}"),
        ("latency max ms", f"{r['max_ms']:.0f}"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"\n{'check':<{width}}  {'value':>8}")
    print("-" * (width + 10))
    for name, value in rows:
        print(f"{name:<{width}}  {value!s:>8}")
    for e in r["errors_5xx"]:
        print(f"  5xx body: {e!r}")
    for e in r["errors_connection"]:
        print(f"  connection error: {e}")
    for e in r["unexpected"]:
        print(f"  unexpected: {e}")
    print(f"\n{'second':>6} {'requests':>8} {'5xx':>5} {'conn err':>8} {'p95 ms':>7}")
    for start, n, n5, nc, p95 in r["timeline"]:
        print(f"{start:>6.0f} {n:>8} {n5:>5} {nc:>8} {p95:>7.0f}")
    if r["server_log"]:
        print("\nserver error log (count  first line of the exception / gunicorn event):")
        for key, n in r["server_log"].items():
            print(f"  {n:>4}  {key}")
    failed = failed_checks(r)
    print("\nRESULT: " + ("all checks held" if not failed else "FAILED: " + ", ".join(failed)))
