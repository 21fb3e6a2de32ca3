"""The order the queue hands a batch's items out in: random for a new batch, from a recorded seed.

Each item's ``queue_rank`` is a key the lease sorts on (after the first tier and closeness to
completion, ``annotator.rating.services.assignment_sql``). In a batch with a seed the key is a hash of the seed
and the item id, 31 bits: the same seed gives the same order, anyone can redraw it, and items added later
fall among the others at random rather than after them, so the items handed out first are a random
sample of whatever the batch holds when they are handed out. A batch without a seed (one made before
the random order, or through the ORM alone) keeps file order: the key is the position.

Why the report needs it: PPI++ is unbiased only for a random labelled set
(``annotator.judges.selectors.sample``).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

MAX_SEED = 2**31 - 1


def new_order_seed() -> int:
    return secrets.randbelow(MAX_SEED + 1)


def random_key(seed: int, item_id: str) -> int:
    """The item's place in the batch's random order: the first 31 bits of BLAKE2b(seed, item id)."""
    digest = hashlib.blake2b(f"{seed}\x00{item_id}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") >> 1


def queue_ranks(seed: int | None, item_ids: Iterable[str], positions: Iterable[int]) -> list[int]:
    """The ``queue_rank`` of new items: their positions without a seed, their random keys with one."""
    if seed is None:
        return list(positions)
    return [random_key(seed, item_id) for item_id in item_ids]
