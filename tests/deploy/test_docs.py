"""docs/configuration.md stays in sync with the worker: every flag and environment variable it reads."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import worker
from tests.deploy.test_doc_links import _anchors

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "configuration.md").read_text()
SOURCES = [ROOT / "worker.py", ROOT / "client" / "connection.py"]


def test_every_worker_flag_is_documented() -> None:
    flags = ["--" + dest.replace("_", "-") for dest in vars(worker.parse_args([]))]
    assert len(flags) >= 10
    missing = [f for f in flags if f"`{f}`" not in DOC]
    assert not missing, f"undocumented worker flags: {missing}"


def test_every_environment_variable_is_documented() -> None:
    names: set[str] = set()
    for source in SOURCES:
        names |= set(re.findall(r"""env\(\s*["']([A-Z][A-Z0-9_]+)["']""", source.read_text()))
        names |= set(re.findall(r"""environ\.get\(\s*["']([A-Z][A-Z0-9_]+)["']""", source.read_text()))
    assert "NODEFLOW_INTERRUPTION_QUEUE" in names and "NODEFLOW_TEMPORAL_ADDRESS" in names
    missing = sorted(n for n in names if f"`{n}`" not in DOC and n != "KUBERNETES_SERVICE_HOST")
    assert not missing, f"undocumented environment variables: {missing}"


# -- every reference resolves inside the repository ------------------------------------------------------------------

TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".sh", ".cfg", ".txt"}
# Notes that lived beside the repository while it was written; a reader of the repository cannot open them.
OUTSIDE = re.compile(r"karpenter-behaviour\.md|karpenter-2026\.md|temporal-python\.md|user-needs\.md"
                     r"|\bDESIGN(?:\.md)?\b(?= §|\.md)|\.\./shared/|shared[/]reference")
# nodeflow's own issues have no public tracker: a comment names the behaviour or the doc, not "issue #N".
NODEFLOW_ISSUE = re.compile(r"(?i)\bissue #\d+\b|\"\"\"#\d+:")
# `docs/x.md`, `docs/x.md#anchor`, `docs/x.md §N.M`: the file, the heading, the numbered section must exist.
CITATION = re.compile(r"\b(docs/[\w-]+\.md)(#[\w-]+)?(?:,? §(\d+(?:\.\d+)*))?")
# The short form, `semantics §15.5` or `decisions.md §19`: the numbered section must exist in that doc.
SHORT_CITATION = re.compile(r"(?<![\w/-])([a-z][\w-]*)(?:\.md)? §(\d+(?:\.\d+)*)")


def _repo_files() -> dict[str, str]:
    """Every tracked text file by path, but the recorded workflow histories (data, not prose) and this file (its
    examples of what the checks refuse)."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    this = str(Path(__file__).resolve().relative_to(ROOT))
    paths = [p for p in listed.split() if not p.startswith("tests/histories/") and p != this]
    return {p: (ROOT / p).read_text(errors="replace") for p in paths
            if Path(p).suffix in TEXT_SUFFIXES and (ROOT / p).is_file()}


def _sections(doc: Path) -> set[str]:
    """The numbers of a doc's numbered headings: `## 3. Launch` -> "3", `### 15.5 Spot fallback` -> "15.5"."""
    return {m.group(1) for m in re.finditer(r"(?m)^#+ (\d+(?:\.\d+)*)\.?\s", doc.read_text())}


def outside_references(files: dict[str, str]) -> list[str]:
    return [f"{path}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            for path, text in files.items() for m in OUTSIDE.finditer(text)]


def broken_citations(files: dict[str, str]) -> list[str]:
    broken = []
    for path, text in files.items():
        for m in CITATION.finditer(text):
            doc, anchor, section = ROOT / m.group(1), m.group(2), m.group(3)
            if not doc.is_file():
                broken.append(f"{path}: {m.group(0)} (no such file)")
            elif anchor and anchor[1:] not in _anchors(doc):
                broken.append(f"{path}: {m.group(0)} (no such heading)")
            elif section and section not in _sections(doc):
                broken.append(f"{path}: {m.group(0)} (no such section)")
        for m in SHORT_CITATION.finditer(text):
            doc = ROOT / "docs" / f"{m.group(1)}.md"
            if doc.is_file() and m.group(2) not in _sections(doc):
                broken.append(f"{path}: {m.group(0)} (no such section)")
    return broken


@pytest.fixture(scope="module")
def repo_files() -> dict[str, str]:
    return _repo_files()


def test_nothing_cites_a_file_outside_the_repository(repo_files: dict[str, str]) -> None:
    assert len(repo_files) > 300 and "README.md" in repo_files
    found = outside_references(repo_files)
    assert not found, f"references to files outside the repository (cite docs/ instead): {found}"


def test_outside_references_are_found() -> None:
    """The check sees each form a citation of an outside note took."""
    files = {"a.py": '"""(karpenter-behaviour.md "NodeClaim lifecycle" §2)"""',
             "b.md": "facts in `shared/reference/x.md`", "c.py": "# names fixed by DESIGN.md §4",
             "d.md": "see ../shared/notes", "e.py": "# new keys go last (DESIGN §4)", "f.py": "# a DESIGN decision"}
    assert [f.split(":")[0] for f in outside_references(files)] == ["a.py", "b.md", "c.py", "d.md", "e.py"]


def test_no_bare_nodeflow_issue_numbers(repo_files: dict[str, str]) -> None:
    found = [f"{path}: {m.group(0)}" for path, text in repo_files.items()
             for m in NODEFLOW_ISSUE.finditer(text)]
    assert not found, f"nodeflow issue numbers (no public tracker): name what they refer to instead: {found}"


def test_every_docs_citation_resolves(repo_files: dict[str, str]) -> None:
    assert sum(len(CITATION.findall(text)) for text in repo_files.values()) > 100
    broken = broken_citations(repo_files)
    assert not broken, f"citations of docs/ that point nowhere: {broken}"


def test_broken_citations_are_found() -> None:
    files = {"ok.py": "docs/karpenter-reference.md §4, docs/semantics.md#15-disruption-policies-nodeflow",
             "file.py": "docs/nowhere.md", "anchor.md": "(docs/semantics.md#no-such-heading)",
             "section.py": "docs/karpenter-reference.md §99", "short.md": "semantics §12, [decisions §99](x)",
             "other.py": "RFC 3339 §5.6"}
    assert [b.split(":")[0] for b in broken_citations(files)] == ["file.py", "anchor.md", "section.py", "short.md"]
