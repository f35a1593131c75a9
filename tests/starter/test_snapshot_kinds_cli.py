"""`plan`, `budgets` and `validate` agree: a file with neither NodePools nor Nodes is an error, with one message
that says how to make a snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from starter.cli import run
from starter.snapshot_source import SNAPSHOT_COMMAND

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def pods_only(tmp_path: Path) -> Path:
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all([POD, PDB]))
    return path


@pytest.mark.parametrize("command", ["plan", "budgets", "validate"])
def test_pods_only_file_is_rejected_alike(command: str, pods_only: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run([command, "-f", str(pods_only)]) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert f"{pods_only}: no NodePool and no Node (found 1 Pod, 1 PodDisruptionBudget)" in text
    assert SNAPSHOT_COMMAND in text


@pytest.mark.parametrize("command", ["plan", "budgets"])
def test_empty_file_is_rejected(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    assert run([command, "-f", str(empty)]) == 1
    assert "no NodePool and no Node (found no objects)" in capsys.readouterr().err


def test_validate_still_accepts_a_lone_ec2nodeclass(capsys: pytest.CaptureFixture[str]) -> None:
    """validate checks manifests: an EC2NodeClass on its own is a file to validate, not a snapshot."""
    assert run(["validate", "-f", str(EXAMPLES / "ec2nodeclass.yaml")]) == 0
    assert capsys.readouterr().out.strip() == "valid"


def test_readme_shows_the_snapshot_command() -> None:
    """The README's snapshot (run from the repository) goes under out/, which git ignores: it landed untracked in
    the repository's root."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    in_out = SNAPSHOT_COMMAND.replace("> snapshot.yaml", "> out/snapshot.yaml")
    assert in_out in readme and "plan -f out/snapshot.yaml" in readme and SNAPSHOT_COMMAND not in readme
    assert "/out/" in (root / ".gitignore").read_text().splitlines()
