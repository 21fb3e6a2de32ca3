"""Where a rating round trip's app CPU goes: cProfile of in-process round trips.

Runs the page flow (GET the next item page + POST the scores) and the htmx flow (one POST
answered by the next item's fragment) through Django's WSGI handler, as gunicorn calls it
(every middleware, DEBUG off, urlencoded forms) on a fresh SQLite file, or on PostgreSQL with --pg-url, and
prints, per flow, the CPU time per round trip and the share of it spent under each part of
the request (cumulative time of the functions that own it), then the top functions, then where
the wall time of a round trip goes: inside database calls (how many; on PostgreSQL the server's
CPU) and outside them. On PostgreSQL, ``--statements`` adds where the time inside the database calls
goes: per statement, its wall time from the app, and the server's planning and execution of it
(EXPLAIN ANALYZE of the same text and values in a transaction rolled back), against the cheapest
message there is (``SELECT 1`` through the same cursor): the floor a round trip of these statements
cannot go under.

    .venv/bin/python bench/round_trip_profile.py                 # SQLite, 3,000 items, 200 round trips
    .venv/bin/python bench/round_trip_profile.py --pg-url postgres://postgres@127.0.0.1:5432/bench_profile
    .venv/bin/python bench/round_trip_profile.py --top 40        # longer function list
    .venv/bin/python bench/round_trip_profile.py --pg-url postgres://postgres@127.0.0.1:5432/bench_profile \
        --statements --top 0 --wall 1                              # the statements' floor

It measures; it does not pass or fail. cProfile slows Python code down by about 1.5-2x, so
the shares matter, not the absolute times (``bench/annotate_bench.py`` times the real server).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Parts of a request, by the function whose cumulative time is the part's (file suffix, name).
PARTS = [
    ("template render", ("django/template/base.py", "_render")),
    ("session + user", ("annotator/sessions.py", "_get_session_from_db")),
    ("rating facts", ("annotator/rating/selectors/facts.py", "_read")),
    ("lease", ("annotator/rating/services/assignment_sql.py", "lease_best_item")),
    ("submission", ("annotator/rating/services/annotations.py", "annotation_submit")),
    ("progress strip", ("annotator/rating/selectors/progress.py", "rating_progress")),
    ("rating form", ("annotator/rating/forms.py", "__init__")),
    ("CSRF", ("django/middleware/csrf.py", "process_view")),
]


def setup(pg_url: str | None) -> None:
    env = {
        "DJANGO_SETTINGS_MODULE": "annotator.settings",
        "SECRET_KEY": "profile-only-not-secret",
        "ALLOWED_HOSTS": "testserver",
        "HTTPS_ONLY": "0",
        "DEBUG": "0",
    }
    if pg_url:
        from annotator_http import recreate_postgres

        recreate_postgres(pg_url)
        env["DATABASE_URL"] = pg_url
    else:
        path = Path(tempfile.mkdtemp()) / "profile.sqlite3"
        env["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.update(env)
    from annotator_http import django_setup

    django_setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


class WsgiClient:
    """Requests straight into Django's WSGI handler, as gunicorn makes them (urlencoded forms,
    cookies), without the test client's own work (signals, multipart bodies, response wrapping)."""

    def __init__(self, handler, cookies: dict[str, str]):
        self.handler, self.cookies = handler, dict(cookies)

    def request(
        self, method: str, path: str, data: dict | None = None, headers: dict | None = None
    ) -> tuple[int, str, dict]:
        from urllib.parse import urlencode

        body = urlencode(data or {}).encode()
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "CONTENT_LENGTH": str(len(body)),
            "CONTENT_TYPE": "application/x-www-form-urlencoded",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "testserver",
            "HTTP_COOKIE": "; ".join(f"{k}={v}" for k, v in self.cookies.items()),
            **(headers or {}),
        }
        status_headers = {}

        def start_response(status, response_headers, exc_info=None):
            status_headers["status"] = int(status.split()[0])
            status_headers["headers"] = response_headers

        chunks = self.handler(environ, start_response)
        text = b"".join(chunks).decode()
        if hasattr(chunks, "close"):
            chunks.close()
        for name, value in status_headers["headers"]:
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        return status_headers["status"], text, dict(status_headers["headers"])

    def get(self, path: str) -> str:
        status, text, _ = self.request("GET", path)
        assert status == 200, status
        return text

    def post(self, path: str, data: dict, headers: dict | None = None) -> tuple[int, str]:
        status, text, _ = self.request(
            "POST",
            path,
            {**data, "csrfmiddlewaretoken": self.cookies["csrftoken"]},
            {"HTTP_X_CSRFTOKEN": self.cookies["csrftoken"], **(headers or {})},
        )
        return status, text


def annotator_client(batch_size: int):
    from annotator_http import make_batch
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.core.handlers.wsgi import WSGIHandler
    from django.middleware.csrf import _get_new_csrf_string
    from django.test import Client

    handler = WSGIHandler()

    batch_id = make_batch(f"profile-{time.time_ns()}", batch_size)
    group, _ = Group.objects.get_or_create(name="annotator")
    users = []
    for i in range(3):  # k = 3: three annotators take turns so the batch fills as in a study
        user = get_user_model().objects.create_user(f"profiler{i}-{time.time_ns()}", password="x")
        user.groups.add(group)
        client = Client()
        client.force_login(user)
        users.append(
            WsgiClient(
                handler, {"sessionid": client.cookies["sessionid"].value, "csrftoken": _get_new_csrf_string()}
            )
        )
    return batch_id, users


def page_round_trip(client, batch_id: int) -> None:
    from annotator_http import ACTION, SCORES

    page = client.get(f"/annotate/{batch_id}/next/")
    status, _ = client.post(ACTION.search(page).group(1), SCORES)
    assert status == 302, status


def htmx_round_trips(clients, batch_id: int, n: int) -> None:
    from annotator_http import ACTION, SCORES

    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "rate-area"}
    pages = {id(c): c.get(f"/annotate/{batch_id}/next/") for c in clients}
    for i in range(n):
        client = clients[i % len(clients)]
        status, text = client.post(ACTION.search(pages[id(client)]).group(1), SCORES, headers)
        assert status == 200, status
        pages[id(client)] = text


def template_times(run, n: int) -> None:
    """CPU per round trip inside each template's render (nested templates counted in their parent too)."""
    from django.template import base

    spent: dict[str, float] = {}
    original = base.Template._render

    def timed_render(self, context):
        start = time.process_time()
        try:
            return original(self, context)
        finally:
            name = getattr(self.origin, "template_name", None) or "(inline)"
            spent[name] = spent.get(name, 0.0) + time.process_time() - start

    base.Template._render = timed_render
    try:
        run()
    finally:
        base.Template._render = original
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  template {name:<40} {1000 * seconds / n:6.2f} ms per round trip")


def profiled(run) -> tuple[float, pstats.Stats]:
    profiler = cProfile.Profile()
    start = time.process_time()
    profiler.enable()
    run()
    profiler.disable()
    return time.process_time() - start, pstats.Stats(profiler)


def timed(run) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def wall_split(run, n: int, database: str) -> None:
    """Where one round trip's wall time goes: inside database calls (their count, and on
    PostgreSQL the server processes' CPU) and outside them (the app's CPU, and waiting for a core)."""
    from annotator_http import postgres_backends_cpu_seconds
    from django.db import connection

    inside = [0.0, 0]

    def timed_call(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            inside[0] += time.perf_counter() - start
            inside[1] += 1

    server = postgres_backends_cpu_seconds(database) if database else 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    with connection.execute_wrapper(timed_call):
        run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    server = (postgres_backends_cpu_seconds(database) - server) if database else 0.0
    ms = lambda seconds: 1000 * seconds / n  # noqa: E731
    print(
        f"  wall {ms(wall):.2f} ms per round trip: in database calls {ms(inside[0]):.2f} ms"
        f" ({inside[1] / n:.1f} calls; server CPU {ms(server):.2f} ms), outside them"
        f" {ms(wall - inside[0]):.2f} ms (app CPU, whole trip: {ms(cpu):.2f} ms); load {os.getloadavg()[0]:.1f}"
    )


def _statement_key(sql: str) -> str:
    """A message's kind: its statements' first words (the lease's message is the user-row lock and the lease)."""
    return " ; ".join(" ".join(part.split()[:5])[: 48 // (sql.count(";") + 1)] for part in sql.split(";"))


def statement_split(run, n: int) -> None:
    """PostgreSQL: per statement of a round trip, its wall time from the app and the server's own
    planning and execution; then the floor: what the round trip's database calls would take if each
    message cost only an empty round trip plus the server's execution (and planning, where the
    statement is not prepared)."""
    import re
    import statistics

    from django.db import connection

    from annotator.hot_sql import hot_cursor

    # One connection for the whole split, so the prepared statements read after the first pass are its own.
    connection.settings_dict["CONN_MAX_AGE"] = None
    connection.close_at = None
    walls: dict[str, list[float]] = {}

    def timed_call(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            walls.setdefault(_statement_key(sql), []).append(time.perf_counter() - start)

    with connection.execute_wrapper(timed_call):
        run()

    # Read before the EXPLAIN pass, whose rolled-back transactions make psycopg forget its statements.
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE generic_plans > 0")
        prepared = {_statement_key(re.sub(r"\$\d+", "%s", row[0])) for row in cursor.fetchall()}

    server: dict[str, list[tuple[float, float]]] = {}

    def explained_call(execute, sql, params, many, context):
        # The statement's own plan and run, on the state it is about to see, then rolled back.
        text, values = sql, list(params or [])
        if text.count(";") and not many:  # the lease's message: explain the lease, not the lock
            text, values = text.split("; ", 1)[1], values[1:]
        from psycopg import ClientCursor

        cursor = ClientCursor(connection.connection)
        cursor.execute("BEGIN")
        try:
            cursor.execute("EXPLAIN (ANALYZE, SUMMARY, TIMING OFF) " + text, values)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("ROLLBACK")
        times = [
            float(re.search(rf"{part} Time: ([\d.]+)", plan).group(1)) / 1000
            for part in ("Planning", "Execution")
        ]
        server.setdefault(_statement_key(sql), []).append(tuple(times))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explained_call):
        run()

    def empty_message():
        with hot_cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchall()

    for _ in range(50):
        empty_message()
    start = time.perf_counter()
    for _ in range(1000):
        empty_message()
    floor = (time.perf_counter() - start) / 1000
    ms = lambda seconds: f"{1000 * seconds:.3f}"  # noqa: E731
    print(f"  {'statement':<48} {'per trip':>8} {'wall ms':>8} {'plan ms':>8} {'run ms':>7}  prepared")
    total_wall = estimate = 0.0
    for key, times in sorted(walls.items(), key=lambda kv: -sum(kv[1])):
        per_trip = len(times) / n
        plan = statistics.median(t[0] for t in server.get(key, [(0.0, 0.0)]))
        execution = statistics.median(t[1] for t in server.get(key, [(0.0, 0.0)]))
        is_prepared = key in prepared
        total_wall += sum(times) / n
        estimate += per_trip * (floor + execution + (0.0 if is_prepared else plan))
        print(
            f"  {key:<48} {per_trip:8.1f} {ms(statistics.median(times)):>8} {ms(plan):>8} {ms(execution):>7}"
            f"  {'yes' if is_prepared else 'no'}"
        )
    print(
        f"  an empty message (SELECT 1) takes {ms(floor)} ms; the round trip's database calls take"
        f" {ms(total_wall)} ms, and would take {ms(estimate)} ms if each cost only that plus the server's"
        " run (and plan, where not prepared)"
    )


def report(flow: str, n: int, cpu: float, stats: pstats.Stats, top: int) -> None:
    total = stats.total_tt
    print(f"\n{flow}: {n} round trips, {1000 * cpu / n:.2f} ms CPU each without the profiler")
    print(f"{'part':<18} {'share':>6}  {'calls/trip':>10}")
    for label, (suffix, name) in PARTS:
        cum = calls = 0
        for (filename, _, function), (_, nc, _, ct, _) in stats.stats.items():
            if function == name and filename.endswith(suffix):
                cum, calls = cum + ct, calls + nc
        if calls:
            print(f"{label:<18} {100 * cum / total:5.1f}%  {calls / n:10.1f}")
    out = io.StringIO()
    stats.stream = out
    stats.sort_stats("tottime").print_stats(top)
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:20000])
    calls = sum(nc for (_, nc, _, _, _) in stats.stats.values())
    print(f"Python function calls per round trip: {calls / n:,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pg-url", help="profile on this PostgreSQL database (dropped and re-created)")
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--flow", choices=["page", "htmx", "both"], default="both")
    parser.add_argument("--wall", type=int, default=3, help="runs of the wall-time split per flow")
    parser.add_argument(
        "--statements",
        action="store_true",
        help="PostgreSQL: each statement's wall, planning and execution time, and the floor they add up to",
    )
    args = parser.parse_args()
    setup(args.pg_url)
    n = args.rounds
    for flow in ["page", "htmx"] if args.flow == "both" else [args.flow]:
        batch_id, clients = annotator_client(max(args.items, 2 * n))
        if flow == "page":

            def run(count, clients=clients, batch_id=batch_id):
                return lambda: [page_round_trip(clients[i % 3], batch_id) for i in range(count)]
        else:

            def run(count, clients=clients, batch_id=batch_id):
                return lambda: htmx_round_trips(clients, batch_id, count)

        run(30)()  # warm up: templates, statement caches, connections
        cpu = timed(run(n))
        _, stats = profiled(run(n))
        report(flow, n, cpu, stats, args.top)
        template_times(run(n), n)
        from annotator_http import postgres_database_name

        database = postgres_database_name(args.pg_url) if args.pg_url else ""
        for _ in range(args.wall):
            wall_split(run(n), n, database)
        if args.statements and database:
            statement_split(run(n), n)


if __name__ == "__main__":
    main()
