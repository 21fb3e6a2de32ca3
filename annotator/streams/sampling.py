"""Which traces go to people: a deterministic hash of the stream's salt and the trace id.

``u = sha256(salt + trace_id)``, its first 8 bytes read as a big-endian integer over 2**64, is uniform
on [0, 1) and fixed for a trace; the trace is sampled when ``u < human_rate``. The salt is drawn when
the stream is made and recorded with the rule, so the sampled set is a known simple random sample
(each trace independently with probability ``human_rate``) that anyone can recompute.
"""

from __future__ import annotations

import hashlib
import secrets


def new_salt() -> str:
    return secrets.token_hex(16)


def sample_value(salt: str, trace_id: str) -> float:
    """The trace's uniform draw in [0, 1).

    >>> sample_value("s", "t") == sample_value("s", "t")
    True
    >>> 0 <= sample_value("s", "t") < 1
    True
    """
    digest = hashlib.sha256((salt + trace_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def is_sampled(salt: str, trace_id: str, human_rate: float) -> bool:
    return sample_value(salt, trace_id) < human_rate
