"""Two checkouts of the app, interleaved: the rating round trip on this one against another.

bench/annotate_bench.py measures one checkout per run; on a machine shared with other work, two
runs minutes apart see different loads, and their difference can be the load's. Here both
checkouts are served at once (gunicorn each, a fresh database each) and their blocks alternate,
in the order A B B A, A B B A, ..., so each pair of blocks sees much the same load. It prints,
per database, flow and number of clients, the medians of p50, p95, round trips per second and
the app's (and PostgreSQL's) CPU per round trip, and the ratios B ÷ A, then the PostgreSQL ÷
SQLite ratios of each checkout's 1-client p95.

    .venv/bin/python bench/ab_bench.py --a /path/to/old-checkout --db both --repeat 4
    .venv/bin/python bench/ab_bench.py --a ../old --b . --pg-url postgres://postgres@127.0.0.1:5432/ab

Each checkout needs its own .venv (a symlink to the same one will do). PostgreSQL databases
``<name>_a`` and ``<name>_b`` (from --pg-url) are dropped and re-created. It measures; it does not
pass or fail.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from annotate_bench import HtmxAnnotator, run_clients
from annotator_http import (
    ROOT,
    Annotator,
    free_port,
    recreate_postgres,
    server_env,
    setup_database,
    start_gunicorn,
)

FIGURES = ("p50", "p95", "rps", "server_cpu_ms", "db_cpu_ms")


class Server:
    """One checkout served on a fresh database, with logged-in page and htmx clients."""

    def __init__(self, label: str, root: Path, database_url: str, args):
        self.label, self.root = label, root
        # Connections live through the run, so the server processes whose CPU is counted do too.
        env = {**server_env(database_url), "DB_CONN_MAX_AGE": "3600"}
        # Enough for the first annotator, who takes part in every block, to rate an item per round trip.
        n_items = args.rounds * len(args.clients) * 2 * args.repeat + 2 * args.warmup + 200
        self.batch_id = setup_database(env, max(args.clients), max(args.items, n_items), root=root)
        self.database = database_url.rsplit("/", 1)[1] if database_url.startswith("postgres") else ""
        self.port = free_port()
        self.process = start_gunicorn(env, self.port, args.workers, root=root)
        page = [Annotator(self.port, f"bench{i}") for i in range(max(args.clients))]
        for client in page:
            client.login()
        htmx = [HtmxAnnotator(self.port, a.username) for a in page]
        for fresh, logged_in in zip(htmx, page):
            fresh.cookies = dict(logged_in.cookies)
        self.clients = {"page": page, "htmx": htmx}
        run_clients(self.port, self.batch_id, page[:1], args.warmup)
        run_clients(self.port, self.batch_id, htmx[:1], args.warmup)

    def block(self, mode: str, n: int, rounds: int) -> dict:
        return run_clients(
            self.port, self.batch_id, self.clients[mode][:n], rounds, self.process.pid, self.database
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def bench_database(db: str, roots: dict[str, Path], args, tmp: str) -> dict:
    servers = {}
    try:
        for label, root in roots.items():
            if db == "PostgreSQL":
                url = recreate_postgres(f"{args.pg_url}_{label.lower()}")
            else:
                url = f"sqlite:///{tmp}/{label}.sqlite3"
            servers[label] = Server(label, root, url, args)
        runs: dict[tuple, list[dict]] = {}
        for r in range(args.repeat):
            for n in args.clients:
                for mode in ("page", "htmx"):
                    order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
                    for label in order:
                        runs.setdefault((label, mode, n), []).append(
                            servers[label].block(mode, n, args.rounds)
                        )
    finally:
        for server in servers.values():
            server.stop()
    return runs


def median(results: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--a", type=Path, required=True, help="the checkout to compare against (A)")
    parser.add_argument("--b", type=Path, default=ROOT, help="the checkout compared (B; default: this one)")
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/bench_ab")
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8])
    parser.add_argument("--rounds", type=int, default=150, help="round trips per block")
    parser.add_argument("--repeat", type=int, default=4, help="pairs of blocks per row; medians are printed")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--items", type=int, default=3000, help="items in each benchmark batch (at least)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers per checkout")
    args = parser.parse_args()
    roots = {"A": args.a.resolve(), "B": args.b.resolve()}
    databases = {"postgres": ["PostgreSQL"], "sqlite": ["SQLite"], "both": ["SQLite", "PostgreSQL"]}[args.db]
    load_start = os.getloadavg()
    all_runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for db in databases:
            all_runs[db] = bench_database(db, roots, args, tmp)
    load_end = os.getloadavg()

    print(f"\nA = {roots['A']}\nB = {roots['B']}")
    print(
        f"gunicorn --workers {args.workers} per checkout; {os.cpu_count()} CPUs; {args.rounds} round trips"
        f" per block; {args.repeat} pairs of blocks per row, A and B alternating (A B, B A, ...); medians."
        f"\nload average at start {load_start[0]:.1f}, at end {load_end[0]:.1f} (1 min); block loads:"
        f" {min(r['load'] for runs in all_runs.values() for rs in runs.values() for r in rs):.1f}"
        f"-{max(r['load'] for runs in all_runs.values() for rs in runs.values() for r in rs):.1f}\n"
    )
    header = (
        f"{'database':<10} {'flow':<5} {'clients':>7} {'app CPU ms A → B':>18} {'×':>5} {'DB CPU ms':>11}"
        f" {'p50 ms A → B':>15} {'×':>5} {'p95 ms A → B':>15} {'×':>5} {'trips/s A → B':>15} {'×':>5}"
    )
    print(header)
    print("-" * len(header))
    p95 = {}
    for db, runs in all_runs.items():
        for n in args.clients:
            for mode in ("page", "htmx"):
                a, b = runs[("A", mode, n)], runs[("B", mode, n)]
                m = {key: (median(a, key), median(b, key)) for key in FIGURES}
                p95[(db, mode, n)] = m["p95"]

                def pair(key, width, m=m):
                    x, y = m[key]
                    return f"{f'{x:.1f} → {y:.1f}':>{width}} {y / x if x else 0:>5.2f}"

                db_cpu = m["db_cpu_ms"]
                print(
                    f"{db:<10} {mode:<5} {n:>7} {pair('server_cpu_ms', 18)} {f'{db_cpu[0]:.1f} → {db_cpu[1]:.1f}':>11}"
                    f" {pair('p50', 15)} {pair('p95', 15)} {pair('rps', 15)}"
                )
    if len(all_runs) == 2 and 1 in args.clients:
        print("\n1-client p95, PostgreSQL ÷ SQLite:")
        for mode in ("page", "htmx"):
            pg, lite = p95[("PostgreSQL", mode, 1)], p95[("SQLite", mode, 1)]
            print(f"  {mode:<5} A {pg[0] / lite[0]:.2f}×  B {pg[1] / lite[1]:.2f}×")
    errors = [
        (db, key, e)
        for db, runs in all_runs.items()
        for key, rs in runs.items()
        for r in rs
        for e in r["errors"]
    ]
    for db, key, error in errors[:10]:
        print(f"  error {db} {key}: {error}")


if __name__ == "__main__":
    main()
