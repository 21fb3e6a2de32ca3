"""No import circles among the project's modules, and every module imports on its own.

Every import counts: at module level, lazy inside a function, and under ``if TYPE_CHECKING:`` (a
circle that only type checkers walk is still a circle a reader has to untangle). A package's
``__init__`` counts as importing what it imports, its own submodules included: importing
``annotator.models`` runs them."""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("annotator", "hcs")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports, anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
            ]
        else:
            continue
        out |= {t for t in targets if t in modules and t != name}
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return result


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_no_import_circles():
    modules = _modules()
    assert _cycles(_graph(modules)) == []


def test_the_checker_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    """Write ``files`` under ``root``; the modules found there, by dotted name."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    found = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@pytest.mark.parametrize(
    "reach_back",
    [
        "from pkg.a import A\n",
        "def f():\n    from pkg import a\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n",
        "import typing\nif typing.TYPE_CHECKING:\n    import pkg.a\n",
        "from . import a\n",
        "from .a import A\n",
    ],
)
def test_the_checker_counts_every_kind_of_import(tmp_path, reach_back):
    modules = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import B\nA = 1\n",
            "pkg/b.py": reach_back + "B = 2\n",
        },
    )
    assert _cycles(_graph(modules)) == [["pkg.a", "pkg.b"]]


def test_the_checker_finds_a_circle_through_a_package_init(tmp_path):
    # The shape the session engine had: a package re-exports a model whose module reaches back to it.
    modules = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/models/__init__.py": "from app.models.session import Session\n",
            "app/models/session.py": "def store():\n    from app.sessions import Store\n",
            "app/sessions.py": "def model():\n    from app.models import Session\n",
        },
    )
    assert _cycles(_graph(modules)) == [["app.models", "app.models.session", "app.sessions"]]
    # The model and its store in one module, re-exported by the package: no circle.
    (tmp_path / "app/models/session.py").unlink()
    modules = _write(
        tmp_path,
        {
            "app/models/__init__.py": "from app.sessions import Session\n",
            "app/sessions.py": "Session = Store = 1\n",
        },
    )
    assert _cycles(_graph(modules)) == []


@pytest.mark.parametrize(
    "name", sorted(n for n in _modules() if not n.endswith(("__main__", "wsgi", "asgi")))
)
def test_module_imports_on_its_own(name):
    importlib.import_module(name)


# The judges' management commands: each joins the core's command folder by a module that only imports it.
JUDGE_COMMANDS = (
    "calibration_set",
    "import_judge_scores",
    "import_traces",
    "import_verdicts",
    "run_judge",
    "select_for_review",
)
# The core modules that import the judges package, and why; everywhere else the core reaches it only
# through a registry's dotted path (REPORT_SECTIONS, HF_PARTS, HF_CARD_SECTIONS, JOB_KINDS, urls).
JUDGE_SEAMS = {
    "annotator.models": "re-exports the judges' models: one app label, so Django finds them here",
    "annotator.reports.exports.formats": "EXPORT_FORMATS includes the judges' rows, JUDGE_EXPORT_FORMATS, by name",
    "annotator.api.main": "the list of API routers mounts the judges' routers",
    "annotator.studies.planning": "the study plan reads each judge's scores to plan its PPI labels",
    "annotator.management.commands.load_demo": "the demo loads judge scores through the judges' services",
    **{
        f"annotator.management.commands.{name}": "Django finds commands only in the app's own folder"
        for name in JUDGE_COMMANDS
    },
}


def test_the_core_imports_the_judges_package_only_where_listed():
    modules = _modules()
    reaching = {
        name
        for name, path in modules.items()
        if name.startswith("annotator.")
        and not name.startswith("annotator.judges")
        and any(m.startswith("annotator.judges") for m in _imports(name, path, modules))
    }
    assert reaching == set(JUDGE_SEAMS)


@pytest.mark.parametrize("command", JUDGE_COMMANDS)
def test_a_judges_command_joins_the_core_by_one_import(command):
    modules = _modules()
    name = f"annotator.management.commands.{command}"
    assert _imports(name, modules[name], modules) == {f"annotator.judges.management.commands.{command}"}
