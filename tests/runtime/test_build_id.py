"""The worker's build id (runtime/build_id.py): nodeflow's version, a digest of the workflow and contract sources,
the SDK's version; the digest follows those sources and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from temporalio.service import __version__ as SDK_VERSION

from runtime.build_id import default_build_id, source_digest


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_default_names_the_versions_and_the_sources() -> None:
    build_id = default_build_id()
    shape = rf"nodeflow-[0-9][\w.]*\+[0-9a-f]{{12}}-temporalio-{re.escape(SDK_VERSION)}"
    assert re.fullmatch(shape, build_id), build_id
    assert source_digest() in build_id


def test_the_digest_follows_workflow_and_contract_sources_only(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"workflows/a.py": "x = 1\n", "workflows/sub/b.py": "y = 2\n", "contracts/c.py": "z = 3\n",
                            "activities/d.py": "w = 4\n", "workflows/notes.txt": "n\n"})
    first = source_digest(root)
    assert source_digest(root) == first
    (root / "activities/d.py").write_text("w = 5\n")  # not workflow code
    (root / "workflows/notes.txt").write_text("m\n")  # not a source
    assert source_digest(root) == first
    (root / "workflows/sub/b.py").write_text("y = 3\n")
    second = source_digest(root)
    assert second != first
    (root / "contracts/c.py").write_text("z = 4\n")
    assert source_digest(root) != second
    (root / "workflows/sub/b.py").rename(root / "workflows/b.py")  # the same bytes elsewhere is other code
    assert source_digest(root) not in (first, second)
