"""`nodeflow demo` and `nodeflow sim` where the [sim] extra is missing (as in the worker image, which has neither
simulator/ nor devstack/): one line naming the extra and exit code 1, not an ImportError traceback. The modules are
hidden with `sys.modules[name] = None`, which makes any import of them fail as if they were not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from starter import sim_extra
from starter.cli import run

SIM_WORLD = ("simulator", "devstack", "celpy", "moto")


def _hide(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> None:
    """The packages and any of their modules an earlier test imported, as if none were installed."""
    for module in [m for m in sys.modules if m.split(".")[0] in names] + list(names):
        monkeypatch.setitem(sys.modules, module, None)


@pytest.mark.parametrize(("argv", "command"), [
    (["demo", "--headless", "--region", "nowhere-1"], "demo"),  # an unknown region: nothing starts, whatever runs
    (["sim", "--kubeconfig-out"], "sim"),
    (["sim", "generate", "--nodes", "1", "--pods-per-node", "1", "-o"], "sim generate"),
])
def test_without_the_extra_the_command_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          argv: list[str], command: str) -> None:
    _hide(monkeypatch, SIM_WORLD)
    args = [*argv, str(tmp_path / "out")] if argv[-1].startswith("-") else [*argv, "--workdir", str(tmp_path)]
    assert run(args) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(f"error: nodeflow {command} needs the [sim] extra"), captured.err
    assert "pip install 'nodeflow[sim]'" in captured.err and "make setup" in captured.err


def test_a_missing_library_of_the_extra_is_named(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """simulator/ present but cel-python not (a plain `pip install nodeflow` ships the package files)."""
    _hide(monkeypatch, ("celpy",))
    assert run(["sim", "generate", "--nodes", "1", "--pods-per-node", "1", "-o", str(tmp_path / "out.yaml")]) == 1
    assert "(no celpy)" in capsys.readouterr().err


def test_this_environment_has_the_extra() -> None:
    """scripts/setup.sh installs .[dev,solver,sim]: the demo's and the simulator's modules are all importable."""
    assert sim_extra.missing(sim_extra.DEMO_MODULES) == []
    assert set(sim_extra.SIM_MODULES) <= set(sim_extra.DEMO_MODULES)
