"""Every relative link in the README and docs/ points at a file that exists, and at a heading that exists.

The README was split into docs/ pages; a moved section must not leave a link behind pointing nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_anchor(m) for m in re.findall(r"(?m)^#+ (.+)$", page.read_text())}


def _links(page: Path) -> list[str]:
    text = re.sub(r"(?s)```.*?```", "", page.read_text())
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        missing_heading = bool(anchor) and dest.suffix == ".md" and anchor not in _anchors(dest)
        if not dest.exists() or missing_heading:
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_readme_stays_short() -> None:
    """The README is for its readers: history and detail live in docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) < 300
