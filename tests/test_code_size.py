"""No product function over 80 lines and no product module over 500: a function that long holds
several steps that deserve names, and a module that long several homes (docs/where-to-change-what.md)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MOST_FUNCTION_LINES = 80
MOST_MODULE_LINES = 500


def _product_modules():
    for package in ("annotator", "hcs"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_no_function_over_80_lines():
    long = []
    for path in _product_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MOST_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def test_no_module_over_500_lines():
    big = [
        f"{path.relative_to(ROOT)} ({n} lines)"
        for path in _product_modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MOST_MODULE_LINES
    ]
    assert big == []
