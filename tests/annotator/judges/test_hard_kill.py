"""SIGKILL on a real run_judge process: the calls in flight stay in the ledger as sent; a rerun pays for none
of them again unless asked (--retry-unknown)."""

from __future__ import annotations

import os
import re
import signal
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.counted import counted
from annotator.judges.services.runs import CLAIM_STALE_AFTER
from annotator.models import Judge, JudgeCall
from tests.annotator.judges.test_run_judge_signals import database_url, finished, manage
from tests.factories import make_batch
from tests.fake_judge import FakeJudge

N_ITEMS, CONCURRENCY = 40, 4
ANSWER = re.compile(r"\(answer (\d+)\)")


def called(requests) -> list[str]:
    return [f"hk-{ANSWER.search(r['body']['messages'][-1]['content']).group(1)}" for r in requests]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_hard_kill_repeats_no_paid_call():
    make_batch("hk", n_items=N_ITEMS)
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DEBUG": "1",
        "DJANGO_SETTINGS_MODULE": "annotator.settings",
    }
    command = (
        "run_judge",
        "hk",
        "--template",
        "hub_answer_correctness",
        "--model",
        "m",
        "--concurrency",
        str(CONCURRENCY),
    )
    with FakeJudge(latency=0.4) as fake:
        proc = manage(env, *command, "--base-url", fake.url)
        deadline = time.monotonic() + 60
        while fake.calls < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        time.sleep(0.6)  # the fake finishes answering the dead client
        before = called(fake.requests)
        rows = dict(JudgeCall.objects.values_list("item__item_id", "status"))
        unknown = sorted(k for k, v in rows.items() if v == JudgeCall.SENT)
        assert unknown, "the kill came while calls were in flight"
        assert set(before) <= set(rows)  # every request that left has a ledger row
        assert len(before) == len(set(before))

        # The killed run never released its claim on the judge: a rerun is refused until the claim is stale.
        busy = manage(env, *command, "--base-url", fake.url)
        assert "is being run by another process" in busy.communicate(timeout=60)[1] and busy.returncode == 1
        Judge.objects.update(run_claimed_at=timezone.now() - CLAIM_STALE_AFTER - timedelta(seconds=1))

        out = finished(manage(env, *command, "--base-url", fake.url))
        again = called(fake.requests)[len(before) :]
        assert not set(again) & set(before)  # nothing sent before is sent again
        assert (
            f"{counted(len(unknown), 'call', 'calls')} sent, outcome unknown" in out
            and "--retry-unknown" in out
        )
        assert (
            sorted(k for k, v in JudgeCall.objects.values_list("item__item_id", "status") if v == "sent")
            == unknown
        )

        out = finished(manage(env, *command, "--base-url", fake.url, "--retry-unknown"))
        retried = called(fake.requests)[len(before) + len(again) :]
        assert sorted(retried) == unknown
    assert JudgeCall.objects.filter(status="ok").count() == N_ITEMS
