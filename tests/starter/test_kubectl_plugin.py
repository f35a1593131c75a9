"""`kubectl nodeflow ...`: the `kubectl-nodeflow` entry point is found by kubectl's plugin lookup when the venv's
bin is on PATH, and its help and usage say `kubectl nodeflow`."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from devstack.binaries import find_binary
from starter.cli import PLUGIN_EXECUTABLE, build_parser, program_name

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def test_pyproject_installs_the_plugin_with_the_same_main() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[PLUGIN_EXECUTABLE] == scripts["nodeflow"] == "starter.cli:main"


@pytest.mark.parametrize(("argv0", "prog"), [
    ("/work/.venv/bin/kubectl-nodeflow", "kubectl nodeflow"), ("kubectl-nodeflow.exe", "kubectl nodeflow"),
    (".venv/bin/nodeflow", "nodeflow"), ("-m", "nodeflow"), ("", "nodeflow")])
def test_program_name_follows_how_it_was_invoked(argv0: str, prog: str) -> None:
    assert program_name(argv0) == prog
    assert build_parser(program_name(argv0)).format_usage().startswith(f"usage: {prog} ")


def _kubectl() -> str:
    found = find_binary("kubectl")
    if not (VENV_BIN / PLUGIN_EXECUTABLE).exists():
        pytest.fail(f"{VENV_BIN / PLUGIN_EXECUTABLE} is missing: run ./scripts/setup.sh (pyproject.toml changed)")
    return found


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_kubectl_finds_and_runs_the_plugin() -> None:
    kubectl = _kubectl()
    listed = _run(kubectl, "plugin", "list")
    assert str(VENV_BIN / PLUGIN_EXECUTABLE) in listed.stdout, listed
    helped = _run(kubectl, "nodeflow", "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: kubectl nodeflow ") and "status" in helped.stdout
    validated = _run(kubectl, "nodeflow", "validate", "-f", "examples/plan-drift.yaml")
    assert validated.returncode == 0 and validated.stdout.strip() == "valid", validated
    wrong = _run(kubectl, "nodeflow", "force", "general-01")  # --reason is required
    assert wrong.returncode == 2 and "usage: kubectl nodeflow force" in wrong.stderr


def test_the_readme_says_how_kubectl_finds_the_plugin() -> None:
    """kubectl answers `unknown command "nodeflow"` until the venv's bin is on PATH: the README says so, with the
    line that does it."""
    readme = (ROOT / "README.md").read_text()
    assert 'export PATH="$PWD/.venv/bin:$PATH"' in readme and "kubectl plugin list" in readme
