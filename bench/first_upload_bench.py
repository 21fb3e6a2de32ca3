"""A fresh server's first upload against a warm one: the upload page, the preview and the confirm.

    .venv/bin/python bench/first_upload_bench.py [--items 20000] [--starts 3] [--workers 2] [--root DIR]

Each start is a fresh gunicorn (``--workers`` sync workers, SQLite in a fresh file, on 127.0.0.1) that
has served nothing but the sign-in. One admin then uploads a batch file of ``--items`` items the way
a browser does: GET /uploads/, POST the file to /uploads/preview/, POST the token to /uploads/confirm/
(saved in the request: the background-upload threshold is raised above the file's size), then does
the same again with a second batch name. The first round is the cold one (modules imported on first
use, templates compiled); the second is warm. Printed: each step's seconds, medians over the fresh
starts, the ratio first ÷ warm, and each worker's resident memory at the end with what it loaded.
With ``--annotations``, the admin then uploads a file of offline annotations (10,000 items × 3
annotators, bench/annotation_import_bench.py's file) into a new batch, timed the same way. Then an
annotator makes ``--round-trips`` rating round trips (GET the next item, POST scores) in the
first batch, and each worker's resident memory is read again. ``--pause`` waits that many seconds
between the upload page and the preview, as a person choosing a file does. ``--root`` runs another
checkout of the app (its own ``.venv``), for a before/after. ``--pg-url`` serves from that
PostgreSQL database instead of SQLite, dropped and re-created for each start.
Not part of the test suite: it measures, it does not pass or fail.
"""

from __future__ import annotations

import argparse
import csv
import http.client
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotator_http import (
    CSRF,
    PASSWORD,
    ROOT,
    Annotator,
    child_pids,
    free_port,
    recreate_postgres,
    rss_mb,
    server_env,
)

TOKEN = re.compile(r'name="token" value="([^"]+)"')
STEPS = ("page", "preview", "confirm")


def generate(path: Path, items: int) -> None:
    """A plain batch file: three systems per prompt, short texts (about 120 bytes a row)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "prompt", "response", "system_id"])
        for i in range(items):
            writer.writerow(
                [
                    f"item-{i:06d}",
                    f"Request {i // 3}: plan a route to the depot avoiding tolls.",
                    f"Route {i}: head north on Main St, then east; no tolls.",
                    f"sys-{i % 3}",
                ]
            )


class Browser:
    """A cookie jar and one connection per request, like bench/annotator_http.Annotator, with uploads."""

    def __init__(self, port: int):
        self.port = port
        self.cookies: dict[str, str] = {}

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = ""
    ) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if content_type:
            headers["Content-Type"] = content_type
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
        finally:
            conn.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            for key, morsel in SimpleCookie(header).items():
                self.cookies[key] = morsel.value
        return response.status, text

    def form(self, path: str, fields: dict[str, str]) -> tuple[int, str]:
        return self.request("POST", path, urlencode(fields).encode(), "application/x-www-form-urlencoded")

    def multipart(self, path: str, fields: dict[str, str], file_name: str, data: bytes) -> tuple[int, str]:
        boundary = uuid.uuid4().hex
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
            for k, v in fields.items()
        ]
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
            "Content-Type: text/csv\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
        parts.append(f"--{boundary}--\r\n".encode())
        return self.request("POST", path, b"".join(parts), f"multipart/form-data; boundary={boundary}")

    def login(self, username: str) -> None:
        _, page = self.request("GET", "/login/")
        status, _ = self.form(
            "/login/",
            {"csrfmiddlewaretoken": CSRF.search(page).group(1), "username": username, "password": PASSWORD},
        )
        if status != 302:
            raise RuntimeError(f"login failed: {status}")


def upload(
    browser: Browser, name: str, file: Path, data: bytes, pause: float, mode: str = "batch"
) -> dict[str, float]:
    """The three steps of one upload, timed; raises when a step does not answer as a browser expects."""
    times = {}
    start = time.perf_counter()
    status, page = browser.request("GET", "/uploads/")
    times["page"] = time.perf_counter() - start
    if status != 200:
        raise RuntimeError(f"upload page: {status}")
    time.sleep(pause)
    start = time.perf_counter()
    status, page = browser.multipart(
        "/uploads/preview/",
        {"csrfmiddlewaretoken": CSRF.search(page).group(1), "mode": mode, "name": name, "k": "3"},
        file.name,
        data,
    )
    times["preview"] = time.perf_counter() - start
    token = TOKEN.search(page)
    if status != 200 or token is None:
        raise RuntimeError(f"preview: {status} {page[:400]!r}")
    start = time.perf_counter()
    status, _ = browser.form(
        "/uploads/confirm/", {"csrfmiddlewaretoken": CSRF.search(page).group(1), "token": token.group(1)}
    )
    times["confirm"] = time.perf_counter() - start
    if status != 302:
        raise RuntimeError(f"confirm: {status}")
    times["total"] = sum(times[s] for s in STEPS)
    return times


LOADED = ("pandas", "numpy", "pyarrow")


def one_start(
    root: Path,
    file: Path,
    workers: int,
    pause: float,
    round_trips: int,
    annotations: Path | None,
    pg_url: str | None = None,
) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="first_upload_"))
    env = server_env(recreate_postgres(pg_url) if pg_url else f"sqlite:///{folder / 'db.sqlite3'}")
    env.update(
        ANNOTATOR_BACKGROUND_UPLOAD_KB=str(10 * file.stat().st_size // 1024 + 1024),
        ANNOTATOR_UPLOAD_DIR=str(folder / "uploads"),
    )
    python = str(root / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=root, env=env, check=True)
    subprocess.run(
        [
            python,
            "manage.py",
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; from django.contrib.auth.models import Group; "
            f"get_user_model().objects.create_superuser('admin', 'a@example.org', {PASSWORD!r}); "
            f"get_user_model().objects.create_user('rater', password={PASSWORD!r}).groups.add("
            "Group.objects.get_or_create(name='annotator')[0])",
        ],
        cwd=root,
        env=env,
        check=True,
    )
    port = free_port()
    server = subprocess.Popen(
        [
            str(root / ".venv" / "bin" / "gunicorn"),
            "annotator.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            "--timeout",
            "300",
        ],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "log", "w"),
    )
    try:
        browser = Browser(port)
        for _ in range(400):
            try:
                browser.login("admin")
                break
            except OSError:
                time.sleep(0.05)
        data = file.read_bytes()
        first = upload(browser, "first", file, data, pause)
        warm = upload(browser, "second", file, data, pause)
        offline = (
            upload(browser, "offline", annotations, annotations.read_bytes(), pause, "annotations")
            if annotations
            else None
        )
        time.sleep(0.5)
        memory = {pid: (rss_mb(pid), _loaded(pid)) for pid in child_pids(server.pid)}
        rater = Annotator(port, "rater")
        rater.login()
        errors = [e for e in (rater.round_trip(1) for _ in range(round_trips)) if e]
        if errors:
            raise RuntimeError(f"{len(errors)} round trips failed: {errors[0]}")
        after = {pid: (rss_mb(pid), _loaded(pid)) for pid in child_pids(server.pid)}
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"first": first, "warm": warm, "offline": offline, "memory": memory, "after": after}


def _loaded(pid: int) -> str:
    """Which of LOADED a worker has mapped (its shared libraries show in /proc/<pid>/maps)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return "?"
    return ",".join(name for name in LOADED if f"/{name}/" in maps) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--starts", type=int, default=3, help="fresh servers; medians are printed")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between the page and the preview")
    parser.add_argument(
        "--annotations", action="store_true", help="also upload offline annotations (10,000 x 3)"
    )
    parser.add_argument("--round-trips", type=int, default=1000, help="rating round trips after the uploads")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to run (default: this one)")
    parser.add_argument(
        "--pg-url", help="serve from this PostgreSQL database (dropped and re-created each start), not SQLite"
    )
    args = parser.parse_args()
    file = Path(f"/tmp/first_upload_{args.items}.csv")
    if not file.exists():
        generate(file, args.items)
    annotations = None
    if args.annotations:
        from annotation_import_bench import generate as generate_annotations

        annotations = Path("/tmp/annotation_import_bench_10000x3.csv")
        if not annotations.exists():
            generate_annotations(annotations, 10_000, 3)
    runs = [
        one_start(
            args.root.resolve(), file, args.workers, args.pause, args.round_trips, annotations, args.pg_url
        )
        for _ in range(args.starts)
    ]
    print(
        f"{args.root.resolve()}: {args.items} items ({file.stat().st_size / 2**20:.1f} MB CSV), "
        f"{args.workers} sync"
        f" workers, {'PostgreSQL' if args.pg_url else 'SQLite'}, pause {args.pause:g} s;"
        f" medians of {args.starts} fresh starts (seconds)\n"
    )
    print(f"{'step':<8} {'first':>7} {'warm':>7} {'first ÷ warm':>12}   first, each start")
    for step in (*STEPS, "total"):
        first = statistics.median(r["first"][step] for r in runs)
        warm = statistics.median(r["warm"][step] for r in runs)
        each = " ".join(f"{r['first'][step]:.2f}" for r in runs)
        print(f"{step:<8} {first:>7.3f} {warm:>7.3f} {first / warm:>12.2f}   {each}")
    if annotations:
        print(
            "offline annotations (30,000 rows), after the batch uploads: "
            + ", ".join(
                f"{step} {statistics.median(r['offline'][step] for r in runs):.3f}"
                for step in (*STEPS, "total")
            )
        )
    print(
        "\nworkers (MB resident, heavy libraries mapped) after the uploads, then after "
        f"{args.round_trips} round trips:"
    )
    for number, r in enumerate(runs, start=1):
        print(
            f"  start {number}: "
            + "; ".join(f"{mb:.0f} MB ({loaded})" for mb, loaded in r["memory"].values())
            + "  |  "
            + "; ".join(f"{mb:.0f} MB ({loaded})" for mb, loaded in r["after"].values())
        )


if __name__ == "__main__":
    main()
