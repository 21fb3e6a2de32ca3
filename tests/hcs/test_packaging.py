"""`hcs` is a library: `pip install .` installs it with its data, and it runs outside the checkout
without Django."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USE = (
    "import sys, hcs, hcs.agreement, hcs.calibration, hcs.scoring, hcs.judge_output, hcs.checklist, "
    "hcs.rubric_markdown; from hcs.rubric import Rubric; "
    "assert 'django' not in sys.modules and 'annotator' not in sys.modules, 'hcs imported the web app'; "
    "assert not hcs.__file__.startswith(sys.argv[1]), hcs.__file__; "
    "print(Rubric.default().dimension_keys[0], hcs.__file__)"
)


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "DJANGO_SETTINGS_MODULE"}}


def test_hcs_never_imports_django():
    code = USE.replace("assert not hcs.__file__.startswith(sys.argv[1]), hcs.__file__; ", "")
    result = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)],
        cwd=ROOT,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("coherence")


@pytest.mark.slow
def test_pip_install_gives_an_importable_package_outside_the_checkout(tmp_path):
    target = tmp_path / "site"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-cache-dir",
            "--target",
            str(target),
            str(ROOT),
        ],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    assert (target / "hcs" / "rubrics" / "hcs.json").is_file()
    assert not (target / "annotator").exists()  # the web app is not part of the package
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    env = {**_clean_env(), "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, "-c", USE, str(ROOT)],
        cwd=notebook,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("coherence") and str(target) in result.stdout
