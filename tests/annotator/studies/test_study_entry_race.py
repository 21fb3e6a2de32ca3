"""Workers' first visits arriving at the same moment: the same id twice is still one account,
and different ids are different accounts (threads, on the suite's database)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections
from django.test import Client

from annotator.models import Enrolment
from tests.annotator.study_support import PID_A, PID_B, entry_url, prolific_link
from tests.factories import make_batch


@pytest.mark.django_db(transaction=True)
def test_simultaneous_first_visits():
    batch = make_batch("race-entry", n_items=4)
    _link, token = prolific_link(batch)
    pids = [PID_A, PID_A, PID_A, PID_B, PID_B, "1" * 24]
    start = threading.Barrier(len(pids))

    def visit(pid) -> tuple[str, int, str]:
        try:
            client = Client()
            start.wait(timeout=30)
            response = client.get(entry_url(token, pid))
            return pid, response.status_code, client.session.get("_auth_user_id")
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=len(pids)) as pool:
        seen = [future.result(timeout=60) for future in [pool.submit(visit, pid) for pid in pids]]
    assert sorted(code for _, code, _ in seen) == [302] * len(pids)
    accounts = {pid: {user for p, _, user in seen if p == pid} for pid in set(pids)}
    assert all(len(users) == 1 for users in accounts.values()), accounts
    assert len({next(iter(users)) for users in accounts.values()}) == 3
    assert Enrolment.objects.filter(batch=batch).count() == 3
