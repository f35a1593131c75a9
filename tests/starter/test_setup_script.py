"""scripts/setup.sh and the Makefile: `make setup` / `make demo` skip the tools only tests use (checkov's own
environment, ~290 MB, and promtool); `make test`, which CI's .ci/run calls, still installs them. The script runs
in a copy of the repository's layout with a stand-in Python that records what it is asked to do (no pip)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/sh
echo "$0 $*" >> "$NODEFLOW_FAKE_LOG"
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
fi
exit 0
"""


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run_setup(tmp_path: Path, *argv: str, installed: bool = True) -> tuple[int, str]:
    """setup.sh in a repository whose .venv is already installed (or, `installed=False`, not yet); returns (exit
    code, what the Pythons did)."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    (tmp_path / "pyproject.toml").write_text("")
    _executable(tmp_path / "python3", FAKE_PYTHON)
    _executable(tmp_path / ".venv" / "bin" / "python", FAKE_PYTHON)
    stamp = tmp_path / ".venv" / ".nodeflow-installed"
    if installed:
        stamp.touch()
        os.utime(tmp_path / "pyproject.toml", (1, 1))
    _executable(tmp_path / "bin" / "promtool", "#!/bin/sh\nexit 0\n")
    log = tmp_path / "calls.log"
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "PYTHON": str(tmp_path / "python3"),
           "NODEFLOW_FAKE_LOG": str(log)}
    proc = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh"), *argv], env=env, capture_output=True,
                          text=True, timeout=60)
    return proc.returncode, log.read_text() if log.exists() else ""


def test_without_test_tools_skips_checkovs_environment(tmp_path: Path) -> None:
    code, calls = _run_setup(tmp_path, "--without-test-tools")
    assert code == 0
    assert ".venv-tools" not in calls and "checkov" not in calls
    assert not (tmp_path / ".venv-tools").exists()


def test_the_install_takes_the_sim_extra(tmp_path: Path) -> None:
    """The demo and the tests run in the simulated world, which the [sim] extra brings (the image leaves it out)."""
    code, calls = _run_setup(tmp_path, "--without-test-tools", installed=False)
    assert code == 0
    assert "-m pip install --quiet -e .[dev,solver,sim]" in calls, calls


def test_the_default_builds_checkovs_environment(tmp_path: Path) -> None:
    code, calls = _run_setup(tmp_path)
    assert code == 0
    pin = re.search(r"^CHECKOV_VERSION=(\S+)$", (ROOT / "scripts" / "setup.sh").read_text(), re.M)
    assert pin is not None and f"checkov=={pin.group(1)}" in calls
    assert (tmp_path / ".venv-tools" / f".checkov-{pin.group(1)}").exists()


def _recipe(target: str) -> list[str]:
    """The commands of one Makefile target and of the targets it depends on, in order."""
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{target}:(.*)\n((?:\t.*\n?)*)", text, re.M)
    assert match is not None, target
    deps = [d for d in match.group(1).split() if d]
    own = [line.strip() for line in match.group(2).splitlines()]
    return [cmd for d in deps for cmd in _recipe(d)] + own


def test_make_demo_and_setup_skip_the_test_tools_and_make_test_installs_them() -> None:
    for target in ("setup", "demo"):
        assert "./scripts/setup.sh --without-test-tools" in _recipe(target), target
    test = _recipe("test")
    assert test[0] == "./scripts/setup.sh" and test[-1].startswith(".venv/bin/python -m pytest")
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_test_run_gets_its_assert_rewritten_bytecode_and_the_demo_does_not(tmp_path: Path) -> None:
    code, calls = _run_setup(tmp_path)
    assert code == 0 and "scripts/rewrite_test_asserts.py" in calls, calls
    demo = tmp_path / "demo"
    demo.mkdir()
    code, calls = _run_setup(demo, "--without-test-tools")
    assert code == 0 and "rewrite_test_asserts" not in calls, calls
