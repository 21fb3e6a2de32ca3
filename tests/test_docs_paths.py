"""Every repository path the README and the docs name exists, and every page they link to is there."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
TOP = ("annotator", "hcs", "tests", "bench", "fixtures", "templates", "static", "docs", "deploy")
PATH_IN_CODE = re.compile(r"`((?:{})/[A-Za-z0-9_./-]+)`".format("|".join(TOP)))
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _named_paths(text):
    for path in PATH_IN_CODE.findall(text):
        # a glob or a placeholder names a family of files, not one
        if not any(ch in path for ch in "*<…"):
            yield path.rstrip(".")


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_named_paths_exist(page):
    text = page.read_text(encoding="utf-8")
    missing = [p for p in _named_paths(text) if not (ROOT / p).exists()]
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    links = [u for u in MD_LINK.findall(text) if "://" not in u and not u.startswith("mailto:")]
    missing = [u for u in links if not (page.parent / u).exists()]
    assert not missing, f"{page.name} links to missing files: {missing}"


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    assert lines[2:6] and "make demo" in "\n".join(lines[:8]) and "make test" in "\n".join(lines[:8])


def test_every_docs_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert not [p.name for p in DOCS if p.name not in nav]
