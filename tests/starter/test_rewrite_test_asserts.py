"""scripts/rewrite_test_asserts.py writes the very file pytest would cache for a test module, where pytest reads
it even with PYTHONDONTWRITEBYTECODE set, and finds every module pytest rewrites here."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from _pytest.assertion import rewrite

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("rewrite_test_asserts", ROOT / "scripts" / "rewrite_test_asserts.py")
assert spec is not None and spec.loader is not None
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)

MODULE = "def test_sum():\n    left = [1, 2]\n    assert sum(left) == 4\n"


def _cached(path: Path) -> Path:
    return rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)


def test_the_file_written_is_the_one_pytest_writes(tmp_path: Path) -> None:
    path = tmp_path / "test_sum.py"
    path.write_text(MODULE)
    assert script.write_one(path) is True
    assert script.write_one(path) is False  # already cached: nothing written again
    ours = _cached(path).read_bytes()
    _cached(path).unlink()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p",
                    "no:randomly", "-c", os.devnull, "--rootdir", str(tmp_path), str(path)],
                   cwd=tmp_path, env=env, capture_output=True, check=True, timeout=120)
    assert _cached(path).read_bytes() == ours  # pytest's own, written by pytest itself


def test_the_cached_code_carries_the_rewritten_assert(tmp_path: Path) -> None:
    path = tmp_path / "test_sum.py"
    path.write_text(MODULE)
    script.write_one(path)
    code = rewrite._read_pyc(path, _cached(path), lambda *_: None)
    assert code is not None
    namespace: dict[str, object] = {}
    exec(code, namespace)
    try:
        namespace["test_sum"]()  # type: ignore[operator]
    except AssertionError as exc:
        assert "where 3 = sum([1, 2])" in str(exc)  # pytest's explanation, not a bare AssertionError
    else:
        raise AssertionError("the module's assert did not fail")


def test_it_finds_the_test_modules_conftests_and_plugins() -> None:
    found = {p.relative_to(ROOT).as_posix() for p in script.rewritten_modules(ROOT / "tests")}
    assert {"tests/conftest.py", "tests/support/sim_fixtures.py", "tests/support/xdist_groups.py",
            "tests/starter/test_rewrite_test_asserts.py"} <= found
    assert "tests/support/disruption_stack.py" not in found  # imported by tests, never rewritten by pytest
    assert script.conftest_plugins(ROOT / "tests" / "conftest.py") == [
        "support.temporal_fixtures", "support.moto_fixtures", "support.sim_fixtures", "support.xdist_groups"]
