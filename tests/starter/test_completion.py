"""Shell completion: the engine over the real parser, the bash script that calls it, kubectl's plugin completion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from devstack.binaries import find_binary
from simulator.server import Simulator
from starter.cli import build_parser, run
from starter.cmd_completion import FILES, NO_FILES, candidates

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))


@pytest.mark.parametrize(("words", "expected"), [
    (["st"], (["status"], NO_FILES)),
    (["pa"], (["pause"], NO_FILES)),
    (["plan", "--u"], (["--until-stable"], NO_FILES)),
    (["plan", "-o", ""], (["table", "json", "yaml"], NO_FILES)),
    (["plan", "--output", "j"], (["json"], NO_FILES)),
    (["plan", "-f", ""], ([], FILES)),
    (["budgets", "--kubeconfig", "/tm"], ([], FILES)),
    (["sim", ""], (["generate"], NO_FILES)),
    (["completion", ""], (["bash", "zsh"], NO_FILES)),
    (["status", "--address", "x:7233", "--al"], (["--all"], NO_FILES)),
    (["force", "n1", "--reason", ""], ([], NO_FILES)),
    (["force", "n1", ""], ([], NO_FILES)),  # NODE given: nothing more to place
])
def test_candidates(words: list[str], expected: tuple[list[str], int], no_cluster: None) -> None:
    assert candidates(build_parser(), words) == expected


def test_node_names_come_from_the_kubeconfig_cluster(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [d for d in yaml.safe_load_all((ROOT / "examples" / "plan-drift.yaml").read_text()) if d]
    sim.load_objects(docs)
    monkeypatch.setenv("KUBECONFIG", sim.kubeconfig_path)
    names = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "Node")
    assert candidates(build_parser(), ["force", ""]) == (names, NO_FILES)
    assert candidates(build_parser(), ["status", names[0][:-1]])[0] == [n for n in names if n.startswith(names[0][:-1])]


def test_hidden_complete_command_prints_kubectls_format(capsys: pytest.CaptureFixture[str], no_cluster: None) -> None:
    assert run(["__complete", "can"]) == 0
    assert capsys.readouterr().out == "cancel\n:4\n"
    assert run(["__complete", "validate", "-f", ""]) == 0
    assert capsys.readouterr().out == ":0\n"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "KUBECONFIG": str(tmp_path / "none")}


def test_bash_script_completes_commands_and_files(tmp_path: Path) -> None:
    (tmp_path / "snapshot.yaml").write_text("")
    script = subprocess.run([str(VENV_BIN / "nodeflow"), "completion", "bash"], capture_output=True, text=True,
                            check=True).stdout
    probe = (f"{script}\n"
             f"COMP_WORDS=({VENV_BIN / 'nodeflow'} st); COMP_CWORD=1; _nodeflow_complete; "
             "echo \"1:${COMPREPLY[*]}\"\n"
             f"COMP_WORDS=(nodeflow plan -f {tmp_path}/snap); COMP_CWORD=3; _nodeflow_complete; "
             "echo \"2:${COMPREPLY[*]}\"\n"
             "complete -p kubectl-nodeflow\n")
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, env=_env(tmp_path), timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1:status" and lines[1] == f"2:{tmp_path}/snapshot.yaml"
    assert "_nodeflow_complete" in lines[2]


def test_zsh_script_loads_bash_completion() -> None:
    out = subprocess.run([str(VENV_BIN / "nodeflow"), "completion", "zsh"], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("#compdef nodeflow kubectl-nodeflow\n") and "bashcompinit" in out
    assert "_nodeflow_complete" in out


def test_kubectl_completes_the_plugin(tmp_path: Path) -> None:
    done = subprocess.run([find_binary("kubectl"), "__complete", "nodeflow", "st"], capture_output=True, text=True,
                          env=_env(tmp_path), timeout=60)
    assert done.stdout.splitlines() == ["status", ":4"], (done.stdout, done.stderr)
