"""The fake endpoints' shared part: an HTTP server on a free loopback port, run from a thread while the
``with`` block lasts."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer


class LocalServer:
    def _serve(self, handler) -> None:
        """Bind ``handler`` (call last in ``__init__``: handlers read the fake's attributes)."""
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
