"""Runs choix and evalica, the reference Bradley–Terry fits (test requirements, not the app's), in a
Python process of their own: ``$HCS_RANKING_ORACLE_PYTHON`` when set, else the interpreter running the
tests. Their iterations and threads then never share a process with the fit they check.
"""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, sys
import numpy as np
data = json.load(sys.stdin)
k, a, b, o = data["k"], data["a"], data["b"], data["outcome"]
out = {}
import evalica
W = {0: evalica.Winner.X, 1: evalica.Winner.Y, 2: evalica.Winner.Draw, 3: evalica.Winner.Draw}
r = evalica.bradley_terry(a, b, [W[x] for x in o], tolerance=1e-13, limit=100000)
s = np.log(np.asarray([r.scores[i] for i in range(k)], float))
out["evalica"] = (s - s.mean()).tolist()
import choix
m = np.zeros((k, k))
for x, y, v in zip(a, b, o):
    if v == 0: m[x, y] += 1
    elif v == 1: m[y, x] += 1
    else: m[x, y] += 0.5; m[y, x] += 0.5
p = choix.ilsr_pairwise_dense(m, tol=1e-14, max_iter=100000)
out["choix"] = (p - p.mean()).tolist()
print(json.dumps(out))
"""


def oracle_python() -> str:
    return os.environ.get("HCS_RANKING_ORACLE_PYTHON") or sys.executable


def reference_fits(bt) -> dict[str, list[float]]:
    """Scores (centred natural-log strengths, ties as half a win) from evalica and choix."""
    python = oracle_python()
    payload = {"k": bt.n_systems, "a": bt.a.tolist(), "b": bt.b.tolist(), "outcome": bt.outcome.tolist()}
    done = subprocess.run(
        [python, "-c", SCRIPT],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
