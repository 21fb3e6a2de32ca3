"""A TCP proxy the tests control: it forwards to a server until told to stall, then keeps every
connection open and forwards nothing (new connections are accepted and left unanswered), as a
database behind a hung proxy or a network that drops traffic looks to the app."""

from __future__ import annotations

import os
import select
import socket
import threading


def _ports() -> range:
    """The ports this project's tests may listen on: 8130-8139, or ``TEST_PORTS`` ("8170-8179") on a
    machine where each user keeps to a range."""
    first, _, last = os.environ.get("TEST_PORTS", "8130-8139").partition("-")
    return range(int(first), int(last or first) + 1)


PORTS = _ports()


class StallingProxy:
    def __init__(self, target: tuple[str, int], port: int | None = None):
        self.target = target
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for candidate in [port] if port else PORTS:
            try:
                self.listener.bind(("127.0.0.1", candidate))
                break
            except OSError:
                continue
        else:
            raise RuntimeError(f"no free port among {list(PORTS)}")
        self.port = self.listener.getsockname()[1]
        self.listener.listen(64)
        self.stalled = threading.Event()
        self.closing = threading.Event()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self) -> None:
        self.stalled.set()

    def resume(self) -> None:
        self.stalled.clear()

    def close(self) -> None:
        self.closing.set()
        for s in [self.listener, *self.sockets]:
            try:
                s.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(client)
            if self.stalled.is_set():
                continue  # accepted, and never answered
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self.sockets.append(upstream)
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        while not self.closing.is_set():
            if self.stalled.is_set():  # hold both sides open, read nothing, send nothing
                self.closing.wait(0.05)
                continue
            try:
                ready, _, _ = select.select(list(peers), [], [], 0.05)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        raise OSError
                    peers[s].sendall(data)
            except (OSError, ValueError):
                for s in peers:
                    try:
                        s.close()
                    except OSError:
                        pass
                return
