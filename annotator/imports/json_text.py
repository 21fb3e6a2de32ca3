"""``json.loads`` for text from uploads: every failure is a ``json.JSONDecodeError``.

The standard parser raises other errors for two kinds of hostile input: an integer with more
digits than Python converts (``ValueError``, over 4,300 digits) and arrays or objects nested
deeper than the recursion limit (``RecursionError``). Callers that catch ``JSONDecodeError`` to
report a row error would otherwise let those through as a crash.
"""

from __future__ import annotations

import json
from typing import Any


def json_loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:
        raise json.JSONDecodeError("a number has too many digits", text, 0) from None
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
