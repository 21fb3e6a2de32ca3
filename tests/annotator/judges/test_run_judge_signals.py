"""SIGTERM and Ctrl-C on a real run_judge process: no new calls, every finished call kept, the rerun completes,
and the exit status says how the run ended (143 after SIGTERM, 130 after Ctrl-C)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from annotator.models import JudgeCall
from tests.factories import make_batch
from tests.fake_judge import FakeJudge

ROOT = Path(__file__).resolve().parents[3]
N_ITEMS, CONCURRENCY = 60, 4


def manage(env, *args, **kwargs):
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


def finished(proc, timeout=60, status=0):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == status, err
    return out


def database_url() -> str:
    """The test database, for the child process: data this test commits is what the child reads."""
    conf = connection.settings_dict
    if conf["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{conf['NAME']}"
    return f"postgres://{conf['USER']}:{conf['PASSWORD']}@{conf['HOST'] or '127.0.0.1'}:{conf['PORT'] or 5432}/{conf['NAME']}"


def saved():
    return JudgeCall.objects.count(), JudgeCall.objects.values("item").distinct().count()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_signals_stop_new_calls_and_keep_every_finished_one():
    make_batch("sig", n_items=N_ITEMS)
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DEBUG": "1",
        "DJANGO_SETTINGS_MODULE": "annotator.settings",
    }
    command = (
        "run_judge",
        "sig",
        "--template",
        "hub_answer_correctness",
        "--model",
        "m",
        "--concurrency",
        str(CONCURRENCY),
    )
    with FakeJudge(latency=0.15) as fake:
        for sig, after, status in ((signal.SIGTERM, 12, 143), (signal.SIGINT, 30, 130)):
            proc = manage(env, *command, "--base-url", fake.url)
            deadline = time.monotonic() + 60
            while fake.calls < after and time.monotonic() < deadline:
                time.sleep(0.01)
            proc.send_signal(sig)
            at_signal = fake.calls
            out = finished(proc, status=status)
            assert "stopped early" in out and "Run the same command again" in out
            # no new calls once the signal arrived (a call being submitted at that instant at most)
            assert fake.calls - at_signal <= CONCURRENCY
            count, distinct = saved()
            assert count == distinct == sum(fake.answered.values()) < N_ITEMS  # every answered call kept
        before = fake.calls
        out = finished(manage(env, *command, "--base-url", fake.url))
        assert "done: " in out
        assert fake.calls - before == N_ITEMS - count  # the rerun calls only what is missing
    assert saved() == (N_ITEMS, N_ITEMS)
    assert max(fake.answered.values()) == 1  # no item was paid for twice
