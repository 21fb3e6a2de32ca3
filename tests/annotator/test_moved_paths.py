"""The import paths from before reports, quality, uploads and rating had packages of their own still
import, for one release: the same module object (so a patch on the old path reaches the new one), a
DeprecationWarning naming the new path, and the module's own spec kept."""

import importlib
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from annotator.moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_the_new_module_and_says_where_it_went(old):
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=MOVED[old].replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is new
    assert module.__name__ == MOVED[old] and module.__spec__.name == MOVED[old]


def test_a_patch_on_an_old_path_reaches_the_new_module():
    from annotator.reports.selectors import batch_report

    sys.modules.pop("annotator.selectors.reports", None)
    with pytest.warns(DeprecationWarning), mock.patch("annotator.selectors.reports.batch_report", "patched"):
        assert batch_report.batch_report == "patched"
    assert batch_report.batch_report != "patched"


def test_every_new_path_is_a_module_of_its_own_and_no_old_one_is_a_file():
    root = Path(__file__).resolve().parents[2]
    for old, new in MOVED.items():
        assert importlib.util.find_spec(new).origin.endswith(".py"), new
        where = root.joinpath(*old.split("."))
        assert not where.with_suffix(".py").exists() and not (where / "__init__.py").exists(), old


def test_the_old_from_import_of_a_moved_package_still_works_in_a_fresh_interpreter():
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n    from annotator.imports import FileRefused\nexcept DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "warnings.simplefilter('ignore')\n"
        "from annotator.imports import FileRefused\nfrom annotator.uploads.files import FileRefused as F\n"
        "print(FileRefused is F)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "warned: annotator.imports moved to annotator.uploads.files" in out
    assert out.strip().endswith("True")
