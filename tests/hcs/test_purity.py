"""hcs/ is pure Python: importing every module of it never imports Django."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import hcs

ROOT = Path(__file__).resolve().parents[2]


def test_hcs_never_imports_django():
    modules = sorted(f"hcs.{m.name}" for m in pkgutil.walk_packages(hcs.__path__))
    assert "hcs.rubric" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "", f"hcs imported Django modules: {result.stdout}"
