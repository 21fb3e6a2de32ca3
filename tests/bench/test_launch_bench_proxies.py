"""The launch bench's two proxies do what the bench's numbers rely on: the HTTP proxy alternates
its backends and builds ``X-Forwarded-For`` as nginx's ``$proxy_add_x_forwarded_for`` (the client's
header, then the address it connected from); the database proxy, when cut, drops its connections
and refuses new ones until it is restored."""

from __future__ import annotations

import http.client
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def launch_bench():
    sys.path.insert(0, str(BENCH))
    try:
        import launch_bench

        yield launch_bench
    finally:
        sys.path.remove(str(BENCH))


def echo_server(name: str) -> ThreadingHTTPServer:
    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = json.dumps(
                {"server": name, "xff": self.headers.get("X-Forwarded-For"), "peer": self.client_address[0]}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, source: str, headers: dict | None = None) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5, source_address=(source, 0))
    try:
        conn.request("GET", "/", headers=headers or {})
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def test_round_robin_with_x_forwarded_for_as_nginx_builds_it(launch_bench):
    backends = [echo_server("a"), echo_server("b")]
    sent = [0, 0]
    proxy = launch_bench.RoundRobinProxy(free_port(), [b.server_address[1] for b in backends], sent)
    try:
        first = get(proxy.port, "127.0.0.7")
        second = get(proxy.port, "127.0.0.8", {"X-Forwarded-For": "192.0.2.1"})
        third = get(proxy.port, "127.0.0.9")
    finally:
        proxy.stop()
        for b in backends:
            b.shutdown()
    assert [first["server"], second["server"], third["server"]] == ["a", "b", "a"]
    assert first["xff"] == "127.0.0.7" and first["peer"] == "127.0.0.1"  # the app sees the proxy's address
    assert second["xff"] == "192.0.2.1, 127.0.0.8"  # with one proxy, the client is the last entry
    assert sent == [2, 1]


def test_a_cut_drops_connections_and_refuses_new_ones_until_restored(launch_bench):
    upstream = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(
        target=lambda: [accepted.append(upstream.accept()[0]) for _ in range(3)], daemon=True
    ).start()
    event = threading.Event()
    proxy = launch_bench.DatabaseProxy(free_port(), upstream.getsockname(), event)
    try:
        before = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        before.sendall(b"ping")
        for _ in range(100):
            if accepted:
                break
            time.sleep(0.02)
        assert accepted[0].recv(4) == b"ping"
        event.set()
        time.sleep(0.2)
        assert before.recv(1) == b""  # dropped
        during = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        assert during.recv(1) == b""  # accepted and closed at once: refused
        event.clear()
        time.sleep(0.2)
        after = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        after.sendall(b"pong")
        for _ in range(100):
            if len(accepted) == 2:
                break
            time.sleep(0.02)
        assert accepted[1].recv(4) == b"pong"
        for s in (before, during, after):
            s.close()
    finally:
        proxy.stop()
        upstream.close()
