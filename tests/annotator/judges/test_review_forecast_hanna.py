"""The figure the review draw's forecast quotes for HANNA is what the draw, as the app makes it, does there."""

import importlib.util

import numpy as np

from annotator.judges.services.review import HANNA_WIDENING, MIX, DrawForecast
from tests.hanna import HANNA_DIR


def _bench():
    path = HANNA_DIR.parents[1] / "bench" / "routing_hanna.py"
    spec = importlib.util.spec_from_file_location("routing_hanna", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_quoted_hanna_widening_is_the_measured_one():
    """π from the four LLM judges' disagreement with the app's uniform share, budget 100: each judge ×
    criterion's interval is 0.5-2 % wider than a random draw's (it was quoted as 11-13 %, the figure of the
    draw with a tenth of the budget spread evenly)."""
    bench = _bench()
    assert bench.MIX == MIX
    _, realised = bench.hanna_widening(budget=100)
    widening = 100 * (np.array(list(realised.values())) - 1)
    low, high = HANNA_WIDENING
    assert low - 0.25 <= widening.min() and widening.max() <= high + 0.25, (widening.min(), widening.max())
    sentence = DrawForecast(0.9, 1.02, 0.01, 0.01).sentence()
    assert f"on HANNA it widened it by {low:g}-{high:g} %" in sentence
