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
    "annotator.streams.services.streams": "a stream's run judges are checked against the template and provider registries",
    "annotator.streams.services.judging": "a stream's judges run through the judges' engine; pushed scores of sampled traces are saved as judge scores",
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


# The modules outside the studies package that import it, and why. "Outside" means every other
# annotator module, the other feature packages (rating, quality, reports, uploads, judges) included:
# they reach the study flow through the rating hooks (``annotator.rating.hooks.RATING_HOOKS``, by
# dotted path) and the study's models through ``annotator.models`` or the app registry.
STUDY_COMMANDS = (
    "add_annotators",
    "create_demo_users",
    "invite_link",
    "plan_study",
    "prolific_review",
    "study_link",
)
STUDY_SEAMS = {
    "annotator.models": "re-exports the studies' models: one app label, so Django finds them here",
    "annotator.urls": "the URL configuration mounts the studies' pages (entry, consent, links, Prolific)",
    "annotator.cli": "the link commands' shared helpers print links as the studies build them",
    **{
        f"annotator.management.commands.{name}": "Django finds commands only in the app's own folder"
        for name in STUDY_COMMANDS
    },
}


def test_only_the_listed_modules_import_the_studies_package():
    modules = _modules()
    reaching = {
        name
        for name, path in modules.items()
        if name.startswith("annotator.")
        and not name.startswith("annotator.studies")
        and any(m.startswith("annotator.studies") for m in _imports(name, path, modules))
    }
    assert reaching == set(STUDY_SEAMS)


# Layers, lowest first. A node is a folder of the core (``annotator/models``, ``annotator/services``,
# ...), one top-level module of the core (``annotator/urls.py``: each its own node, as they sit at
# every height), a feature package (``annotator/studies``, ``annotator/rating``, ...: one node each,
# its own folders inside it), or ``hcs``. The features sit above the core's data layers and below
# the core's pages and entry points, which put them together. Every node must be placed here.
FEATURES = ("studies", "rating", "quality", "reports", "uploads", "judges", "streams")
LAYERS = (
    ("hcs",),
    # Helpers: settings, database and SQL helpers, text helpers, roles; the package's __init__.
    (
        "annotator",
        "annotator.client_address",
        "annotator.counted",
        "annotator.db_deadline",
        "annotator.db_private",
        "annotator.db_rows",
        "annotator.env",
        "annotator.gunicorn_workers",
        "annotator.hot_sql",
        "annotator.markdown_text",
        "annotator.moved",
        "annotator.not_allowed",
        "annotator.pgbackend",
        "annotator.plots",
        "annotator.roles",
        "annotator.settings",
        "annotator.turns",
    ),
    ("annotator.models", "annotator.sessions"),  # the session engine holds the session model
    ("annotator.selectors",),
    ("annotator.services", "annotator.job_kinds"),  # the table of job runners the job services read
    ("annotator.forms",),
    # The commands' shared helpers sit with the features: the core's and the judges' commands use them.
    (*(f"annotator.{name}" for name in FEATURES), "annotator.cli"),
    ("annotator.views", "annotator.api", "annotator.templatetags", "annotator.middleware"),
    # Entry points: commands, the worker's tasks, the URL configuration, the admin, the app, WSGI.
    (
        "annotator.management",
        "annotator.tasks",
        "annotator.urls",
        "annotator.admin",
        "annotator.apps",
        "annotator.wsgi",
    ),
)
# The lower nodes that import higher ones, and why (each pair counted once, however many imports).
BACK_ARROWS = {
    ("annotator.models", "annotator.studies"): "re-exports the studies' models: one app label",
    ("annotator.models", "annotator.judges"): "re-exports the judges' models: one app label",
    ("annotator.models", "annotator.streams"): "re-exports the streams' models: one app label",
    (
        "annotator.judges",
        "annotator.api",
    ): "the judges' routers use the API's auth, schemas and problem replies",
    (
        "annotator.streams",
        "annotator.api",
    ): "the streams' router uses the API's auth, schemas and problem replies",
}
MOST_BACK_ARROWS = 8


def _node(module: str) -> str:
    """The layer graph's node of a module: its core folder, its top-level module, its feature, or hcs."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "annotator" else parts[0]


def _node_edges(graph: dict[str, set[str]]) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """Node pairs with the module imports behind each."""
    edges: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for name, targets in graph.items():
        for target in targets:
            if _node(name) != _node(target):
                edges.setdefault((_node(name), _node(target)), set()).add((name, target))
    return edges


def _layer_of() -> dict[str, int]:
    return {node: height for height, nodes in enumerate(LAYERS) for node in nodes}


def _back_arrows(graph: dict[str, set[str]]) -> dict[tuple[str, str], set[tuple[str, str]]]:
    layer = _layer_of()
    return {pair: imports for pair, imports in _node_edges(graph).items() if layer[pair[0]] < layer[pair[1]]}


def _core_folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The core's nodes (feature packages and hcs left out) and the imports between them."""
    core = {
        _node(m) for m in graph if _node(m) != "hcs" and _node(m).removeprefix("annotator.") not in FEATURES
    }
    out: dict[str, set[str]] = {node: set() for node in core}
    for a, b in _node_edges(graph):
        if a in core and b in core:
            out[a].add(b)
    return out


def test_every_node_has_a_layer():
    graph = _graph(_modules())
    assert {_node(m) for m in graph} - set(_layer_of()) == set()


def test_the_core_folders_import_each_other_without_a_loop():
    assert _cycles(_core_folder_graph(_graph(_modules()))) == []


def test_lower_layers_import_higher_ones_only_where_listed():
    back = _back_arrows(_graph(_modules()))
    assert set(back) == set(BACK_ARROWS), {
        pair: sorted(back[pair])[:3] for pair in set(back) - set(BACK_ARROWS)
    }
    assert len(back) <= MOST_BACK_ARROWS


def test_the_layer_check_counts_a_lazy_import_as_a_back_arrow(tmp_path):
    modules = _write(
        tmp_path,
        {
            "annotator/__init__.py": "",
            "annotator/models/__init__.py": "def f():\n    from annotator.views import home\n",
            "annotator/views/__init__.py": "",
            "annotator/views/home.py": "from annotator.models import X\n",
        },
    )
    graph = _graph(modules)
    assert set(_back_arrows(graph)) == {("annotator.models", "annotator.views")}
    assert _cycles(_core_folder_graph(graph)) == [["annotator.models", "annotator.views"]]
