"""Link tokens: random, unguessable, stored only as a hash.

A token is 32 random bytes from :mod:`secrets` (256 bits, URL-safe base64). It is shown once,
when the link is made; the database keeps its SHA-256, which is enough for a secret of that
strength (no salt or slow hash is needed: nothing to brute-force).
"""

from __future__ import annotations

import hashlib
import secrets

TOKEN_BYTES = 32


def token_new() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
