"""Memory and the garbage collector around the requests that read a whole file (uploads).

An upload builds hundreds of thousands of small objects. The cyclic garbage collector would walk
the growing heap again and again while they are made, though none of them forms a cycle
(``gc_paused``). Once they are freed, glibc keeps the emptied heap pages mapped, so a worker that
served one upload would hold that memory for the rest of its life: ``malloc_trim(0)`` returns them
(``releases_memory``); on a C library without it that does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from contextlib import ContextDecorator
from functools import cache, wraps


class gc_paused(ContextDecorator):  # noqa: N801 (used as a decorator and a context manager)
    """The cyclic collector off inside, restored as it was on the way out (reference counting still
    frees everything that is not in a cycle). Nested uses keep it off until the outermost ends."""

    def _recreate_cm(self):
        return type(self)()  # one state per call, so calls in two threads do not share it

    def __enter__(self):
        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self._was_enabled:
            gc.enable()
        return False


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def memory_release() -> bool:
    """Return freed heap pages to the system; whether the C library could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def releases_memory(view):
    """Run ``view``, then return the memory it freed (its locals are gone by then)."""

    @wraps(view)
    def wrapped(*args, **kwargs):
        try:
            return view(*args, **kwargs)
        finally:
            memory_release()

    return wrapped
