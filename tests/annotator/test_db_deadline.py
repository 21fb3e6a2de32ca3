"""The watchdog behind the database deadline: a call past its deadline has its socket shut down
(the blocked read returns at once); a call that finishes in time is left alone."""

from __future__ import annotations

import socket
import time

from annotator.db_deadline import watchdog


def test_a_read_past_its_deadline_is_ended():
    ours, server = socket.socketpair()  # the server never answers
    try:
        fired = watchdog.fired
        started = time.monotonic()
        with watchdog.guard(ours.fileno(), 0.3):
            assert ours.recv(1) == b""  # shut down: the read ends instead of waiting for ever
        assert 0.25 < time.monotonic() - started < 2 and watchdog.fired == fired + 1
    finally:
        ours.close()
        server.close()


def test_a_call_that_finishes_in_time_is_left_alone():
    ours, server = socket.socketpair()
    try:
        fired = watchdog.fired
        for _ in range(50):
            with watchdog.guard(ours.fileno(), 0.2):
                server.sendall(b"x")
                assert ours.recv(1) == b"x"
        time.sleep(0.4)  # past every deadline: none of them fires
        server.sendall(b"y")
        assert ours.recv(1) == b"y" and watchdog.fired == fired
    finally:
        ours.close()
        server.close()
