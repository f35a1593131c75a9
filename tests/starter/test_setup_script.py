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
if [ "$1" = venv ]; then  # uv venv ... DIR
  for last in "$@"; do :; done
  mkdir -p "$last/bin" && cp "$0" "$last/bin/python"
fi
if [ "$*" = "-m pip install --quiet uv" ]; then
  [ -n "$NODEFLOW_FAKE_NO_UV" ] && exit 1
  cp "$0" "$(dirname "$0")/uv"
fi
exit 0
"""


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run_setup(tmp_path: Path, *argv: str, installed: bool = True, uv: bool = True) -> tuple[int, str, str]:
    """setup.sh in a repository whose .venv is already installed (or, `installed=False`, not yet); returns (exit
    code, what the Pythons and uv did, the script's stderr). `uv=False`: uv cannot be installed."""
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
           "NODEFLOW_FAKE_LOG": str(log), **({} if uv else {"NODEFLOW_FAKE_NO_UV": "1"})}
    proc = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh"), *argv], env=env, capture_output=True,
                          text=True, timeout=60)
    return proc.returncode, log.read_text() if log.exists() else "", proc.stderr


def test_without_test_tools_skips_checkovs_environment(tmp_path: Path) -> None:
    code, calls, _ = _run_setup(tmp_path, "--without-test-tools")
    assert code == 0
    assert ".venv-tools" not in calls and "checkov" not in calls
    assert not (tmp_path / ".venv-tools").exists()


def test_the_install_takes_the_sim_extra_through_uv_with_bytecode(tmp_path: Path) -> None:
    """The demo and the tests run in the simulated world, which the [sim] extra brings (the image leaves it out).
    uv installs it, compiling the bytecode as pip would (the machines set PYTHONDONTWRITEBYTECODE)."""
    code, calls, _ = _run_setup(tmp_path, "--without-test-tools", installed=False)
    assert code == 0
    assert "bin/python -m pip install --quiet uv" in calls, calls
    assert (".venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python -e .[dev,solver,sim]"
            in calls), calls
    assert "-m pip install --quiet -e" not in calls


def test_uv_makes_checkovs_environment_and_installs_into_it(tmp_path: Path) -> None:
    code, calls, _ = _run_setup(tmp_path, installed=False)
    assert code == 0
    assert ".venv/bin/uv venv --quiet --python" in calls and ".venv-tools" in calls, calls
    assert "--python .venv-tools/bin/python checkov==" in calls, calls


def test_without_uv_pip_installs_and_says_so(tmp_path: Path) -> None:
    code, calls, err = _run_setup(tmp_path, installed=False, uv=False)
    assert code == 0 and "installing with pip, which is slower" in err
    assert "-m pip install --quiet -e .[dev,solver,sim]" in calls and "uv pip install" not in calls, calls
    assert ".venv-tools/bin/python -m pip install --quiet checkov==" in calls, calls


def test_a_failed_install_exits_non_zero_with_the_installers_last_lines(tmp_path: Path) -> None:
    _executable(tmp_path / ".venv" / "bin" / "uv", "#!/bin/sh\necho 'No solution found when resolving' >&2\nexit 1\n")
    code, _, err = _run_setup(tmp_path, "--without-test-tools", installed=False)
    assert code == 1 and "failed; the last lines of .venv/setup.log" in err and "No solution found" in err, err


def test_the_default_builds_checkovs_environment(tmp_path: Path) -> None:
    code, calls, _ = _run_setup(tmp_path)
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
    code, calls, _ = _run_setup(tmp_path)
    assert code == 0 and "scripts/rewrite_test_asserts.py" in calls, calls
    demo = tmp_path / "demo"
    demo.mkdir()
    code, calls, _ = _run_setup(demo, "--without-test-tools")
    assert code == 0 and "rewrite_test_asserts" not in calls, calls
