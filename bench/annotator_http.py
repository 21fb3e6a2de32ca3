"""Shared pieces of the HTTP benchmarks: a fresh database, gunicorn on loopback, simulated annotators.

Used by bench/annotate_bench.py (round-trip speed) and bench/load_faults.py (load with faults).
``python bench/annotator_http.py --seed N_USERS N_ITEMS`` seeds the database named by DATABASE_URL
(in a child process, so the caller needs no Django) and prints ``{"batch": id}``.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
PASSWORD = "bench-password-not-secret-42"
SCORES = {
    "score_coherence": "4",
    "score_relevance": "4",
    "score_instruction_following": "3",
    "score_safety_compliance": "5",
    "score_fluency": "4",
    "constraint_0": "met",
    "constraint_1": "not_met",
}
ACTION = re.compile(r'action="(/annotate/(?:item|answer)/(\d+)/submit/)"')  # an item, or a gold check
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


# --------------------------------------------------------------------------- server side
def server_env(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        DEBUG="0",
        SECRET_KEY="bench-only-secret-key-not-for-production-use-0123456789",
        ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
        HTTPS_ONLY="0",
        LOG_LEVEL="ERROR",
        DJANGO_SETTINGS_MODULE="annotator.settings",
    )
    return env


def postgres_database_name(url: str) -> str:
    """The database a postgres:// URL names (a query string, e.g. ``?options=-c%20…``, is not part of it)."""
    return url.split("?", 1)[0].rsplit("/", 1)[1]


def recreate_postgres(url: str) -> str:
    """Drop and create the database named at the end of a postgres:// URL; returns the URL."""
    import psycopg

    base, name = url.split("?", 1)[0].rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return url


def setup_database(
    env: dict[str, str], n_users: int, n_items: int, k: int = 3, study: bool = False, root: Path = ROOT
) -> int:
    """Migrate, create annotators bench0.. and a batch (in child processes, with the checkout at
    ``root``), a study with quality control when ``study``; returns the batch id."""
    python = str(root / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=root, env=env, check=True)
    out = subprocess.run(
        [
            python,
            str(root / "bench" / "annotator_http.py"),
            "--seed",
            str(n_users),
            str(n_items),
            str(k),
            *(["study"] if study else []),
        ],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(json.loads(out.strip().splitlines()[-1])["batch"])


def django_setup() -> None:
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def make_batch(name: str, n_items: int, k: int = 3) -> int:
    from annotator.models import Batch, Item
    from annotator.rating.services.queue_order import new_order_seed, random_key
    from hcs.rubric import Rubric

    # A seeded random order, as the batch service gives a new batch.
    batch = Batch.objects.create(
        name=name, rubric=Rubric.default().to_dict(), k=k, order_seed=new_order_seed()
    )
    Item.objects.bulk_create(
        (
            Item(
                batch=batch,
                item_id=f"{name}-{i}",
                prompt_id=f"p{i // 2}",
                position=i,
                queue_rank=random_key(batch.order_seed, f"{name}-{i}"),
                system_id=f"s{i % 2}",
                prompt=f"Plan a route to terminal {i} avoiding tolls; arrive before 8AM.",
                response="Take the ring road west (no tolls), leave by 6:40.\n" * 8,
                constraints=["avoid tolls", "arrive before 8AM"],
            )
            for i in range(n_items)
        ),
        batch_size=1000,
    )
    return batch.pk


def make_study(batch_id: int, users) -> None:
    """Turn the batch into a study with every feature that reads per request: consent and
    instructions (already given by each user), a quota, a session length, and quality control
    with a gold check every 50 items."""
    from django.utils import timezone

    from annotator.models import Batch, Enrolment, GoldItem, QualityRule

    batch = Batch.objects.get(pk=batch_id)
    batch.consent_text, batch.instructions = "You agree to rate.", "Read each response in full."
    batch.max_items_per_annotator, batch.max_session_minutes = 100_000, 24 * 60
    batch.save()
    QualityRule.objects.create(batch=batch, check_every=50, training_items=0)
    dims = [d.key for d in batch.rubric_obj.dimensions]
    for n in range(3):
        GoldItem.objects.create(
            batch=batch,
            item_id=f"check-{n}",
            kind="check",
            position=n,
            prompt="Plan a route avoiding tolls.",
            response="Take the ring road west.",
            constraints=["avoid tolls", "arrive before 8AM"],
            scores=dict.fromkeys(dims, 4),
            flags=None,
            tolerance=1,
        )
    now = timezone.now()
    for user in users:
        Enrolment.objects.create(user=user, batch=batch, consented_at=now, instructions_seen_at=now)


def seed(n_users: int, n_items: int, k: int = 3, study: bool = False) -> None:
    django_setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection

    group, _ = Group.objects.get_or_create(name="annotator")
    User = get_user_model()
    users = []
    for i in range(n_users):
        user = User.objects.create_user(f"bench{i}", password=PASSWORD)
        user.groups.add(group)
        users.append(user)
    batch_id = make_batch("bench", n_items, k)
    if study:
        make_study(batch_id, users)
    # Planner statistics, as autovacuum gathers them within a minute of an upload; without
    # them PostgreSQL plans the lease query for an empty table.
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(json.dumps({"batch": batch_id}))


def free_port() -> int:
    """A free port on 127.0.0.1: the first free one of ``BENCH_PORTS`` ("8230-8239") when that is
    set, on a machine where each user keeps to a range; otherwise any the system gives."""
    first, _, last = os.environ.get("BENCH_PORTS", "").partition("-")
    for port in range(int(first), int(last or first) + 1) if first else [0]:
        with socket.socket() as s:
            # As gunicorn binds: connections closed on the port a moment ago (TIME_WAIT) do not count.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise OSError(f"no free port in BENCH_PORTS={os.environ['BENCH_PORTS']}")


def start_gunicorn(
    env: dict[str, str],
    port: int,
    workers: int,
    *extra: str,
    log_path: str | Path | None = None,
    app: str = "annotator.wsgi",
    root: Path = ROOT,
) -> subprocess.Popen:
    """gunicorn on 127.0.0.1:port serving the checkout at ``root``; returns once it accepts
    connections (the Popen is the master).

    Its stderr (gunicorn's and Django's error log) goes to ``log_path``, or is discarded: a pipe
    nobody reads would fill up and stall the workers.
    """
    log = open(log_path, "a") if log_path else subprocess.DEVNULL  # noqa: SIM115 (closed with the process)
    process = subprocess.Popen(
        [
            str(root / ".venv" / "bin" / "gunicorn"),
            app,
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            *extra,
        ],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
        text=True,
    )
    for _ in range(400):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            if process.poll() is not None:
                tail = Path(log_path).read_text()[-2000:] if log_path else "(no log kept)"
                raise RuntimeError(f"gunicorn exited: {tail}") from None
            time.sleep(0.05)
    process.terminate()
    raise RuntimeError("gunicorn did not start")


def rss_mb(pid: int) -> float:
    """Resident memory of one process, from /proc (Linux only); 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def child_pids(parent: int) -> list[int]:
    """Processes whose parent is ``parent`` (gunicorn's workers under its master), from /proc."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return sorted(pids)


# --------------------------------------------------------------------------- client side
class Annotator:
    """One browser: a cookie jar and a fresh connection per request."""

    def __init__(self, port: int, username: str, timeout: float = 60):
        self.port = port
        self.cookies: dict[str, str] = {}
        self.username = username
        self.timeout = timeout

    def extra_headers(self) -> dict[str, str]:
        """Headers a subclass adds to every request."""
        return {}

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, str, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), **self.extra_headers()}
        data = None
        if body is not None:
            data = urlencode(body, doseq=True)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
        finally:
            conn.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie(header)
            for key, morsel in cookie.items():
                self.cookies[key] = morsel.value
        return response.status, text, dict(response.headers)

    def login(self) -> None:
        status, page, _ = self.request("GET", "/login/")
        token = CSRF.search(page).group(1)
        status, _, _headers = self.request(
            "POST", "/login/", {"csrfmiddlewaretoken": token, "username": self.username, "password": PASSWORD}
        )
        if status != 302 or "sessionid" not in self.cookies:
            raise RuntimeError(f"login failed for {self.username}: {status}")

    def round_trip(self, batch_id: int) -> str | None:
        """GET the next item, POST scores. Returns an error description or None."""
        status, page, _ = self.request("GET", f"/annotate/{batch_id}/next/")
        if status != 200:
            return f"GET {status}: {page[:120]!r}"
        match = ACTION.search(page)
        if match is None:
            return "no item offered"
        token = CSRF.search(page).group(1)
        status, text, _headers = self.request(
            "POST", match.group(1), {**SCORES, "csrfmiddlewaretoken": token}
        )
        if status != 302:
            return f"POST {status}: {text[:120]!r}"
        return None


def fresh_database(database: str, pg_url: str, sqlite_path: Path) -> str:
    """A fresh database's URL: the SQLite file (and its WAL files) deleted, or the PostgreSQL
    database dropped and re-created."""
    if database == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{sqlite_path}{suffix}").unlink(missing_ok=True)
        return f"sqlite:///{sqlite_path}"
    return recreate_postgres(pg_url)


def _cpu_seconds(chosen) -> float:
    """CPU time (user + system) of the processes ``chosen(entry, ppid)`` picks, from /proc (Linux
    only; processes that cannot be read are left out)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if not chosen(entry, int(fields[1])):
                continue
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def process_cpu_seconds(root_pid: int) -> float:
    """CPU time of a process and its children."""
    return _cpu_seconds(lambda entry, ppid: root_pid in (int(entry.name), ppid))


def postgres_backends_cpu_seconds(database: str) -> float:
    """CPU time of the PostgreSQL server processes serving ``database`` on this machine."""

    def serving(entry: Path, _ppid: int) -> bool:
        title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        return title.startswith("postgres:") and f" {database} " in title

    return _cpu_seconds(serving)


if __name__ == "__main__" and len(sys.argv) >= 4 and sys.argv[1] == "--seed":
    seed(
        int(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]) if len(sys.argv) > 4 else 3,
        "study" in sys.argv[5:],
    )
