"""Write pytest's assert-rewritten bytecode of the test modules once, before the test run reads them.

pytest rewrites the asserts of every test module, conftest and plugin it imports, and caches the result beside
the source (`__pycache__/<name>.cpython-311-pytest-<version>.pyc`), but only where bytecode may be written: with
`PYTHONDONTWRITEBYTECODE` set (as on the machines measured) each of `make test`'s four workers rewrote all ~400
modules again, about 11 of the 25 CPU-seconds of a worker's collection. A cached file is read whatever that
variable says. This writes the same files as pytest would (its own rewriter and writer, so the format follows the
installed pytest), one process per core; a pytest whose internals moved makes it say so and do nothing, and the
test run then rewrites as before.
"""

from __future__ import annotations

import ast
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def conftest_plugins(conftest: Path) -> list[str]:
    """The modules a conftest names in `pytest_plugins` (pytest rewrites them too), read where they are listed."""
    for node in ast.parse(conftest.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytest_plugins" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def rewritten_modules(tests: Path) -> list[Path]:
    """What pytest rewrites here: test files (its default `python_files`), conftests, and conftest's plugins."""
    found = {*tests.rglob("test_*.py"), *tests.rglob("*_test.py"), *tests.rglob("conftest.py")}
    found |= {tests.joinpath(*name.split(".")).with_suffix(".py") for name in conftest_plugins(tests / "conftest.py")}
    return sorted(p for p in found if p.is_file() and "__pycache__" not in p.parts)


def write_one(path: Path) -> bool:
    """Rewrite one module and write its cached file. False when pytest's cache already holds this source."""
    from _pytest.assertion import rewrite

    pyc = rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)
    quiet = SimpleNamespace(trace=lambda *_: None)
    if rewrite._read_pyc(path, pyc, quiet.trace) is not None:
        return False
    pyc.parent.mkdir(parents=True, exist_ok=True)
    source_hash, code = rewrite._rewrite_test(path, None)  # type: ignore[arg-type]  # None: the default ini
    return bool(rewrite._write_pyc(quiet, code, source_hash, pyc))  # type: ignore[arg-type]


def main() -> int:
    try:
        from _pytest.assertion import rewrite

        for name in ("get_cache_dir", "PYC_TAIL", "_read_pyc", "_rewrite_test", "_write_pyc"):
            getattr(rewrite, name)
    except (ImportError, AttributeError) as exc:
        print(f"note: pytest's assert rewriting has moved ({exc}); the test run rewrites as it goes", file=sys.stderr)
        return 0
    files = rewritten_modules(ROOT / "tests")
    with ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, 4)) as pool:
        written = sum(pool.map(write_one, files, chunksize=16))
    print(f"assert-rewritten bytecode: {written} of {len(files)} test modules written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
