"""Imports run one way (docs/architecture.md): each package may import only the layers below it.

Every import counts, also one inside a function, because a lazy import is how a back edge hides.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = {"api", "planning", "workflows", "activities", "client", "runtime", "telemetry", "devstack", "simulator",
        "starter", "bench", "worker"}

# What each layer may import of ours (itself always). `workflows` and `activities` reference each other:
# workflows name activity methods (passed through the sandbox), activities build workflow inputs.
ALLOWED: dict[str, set[str]] = {
    "telemetry": set(),
    "api": set(),
    "planning": {"api"},
    "workflows": {"api", "planning", "activities", "telemetry"},
    "activities": {"api", "planning", "workflows", "telemetry"},
    "client": {"api", "planning", "workflows", "activities", "telemetry"},
    "runtime": {"api", "planning", "workflows", "activities", "client", "telemetry"},
    "worker": {"api", "workflows", "client", "runtime", "telemetry"},
    "simulator": {"api"},
    "devstack": {"api", "workflows", "client", "runtime", "simulator", "telemetry"},
    "starter": OURS - {"bench", "worker"},
}
# What a pure layer must never import (docs/architecture.md §2): no Temporal, Kubernetes or AWS in api/, planning/.
FORBIDDEN_LIBRARIES = {"api": {"temporalio", "kubernetes", "boto3", "botocore"},
                       "planning": {"temporalio", "kubernetes", "boto3", "botocore"}}


def _sources(layer: str) -> list[Path]:
    if layer == "worker":
        return [ROOT / "worker.py"]
    return sorted((ROOT / layer).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def violations(layer: str) -> list[str]:
    allowed = ALLOWED[layer] | {layer}
    bad = []
    for path in _sources(layer):
        found = _imports(path)
        for name in sorted((found & OURS) - allowed):
            bad.append(f"{path.relative_to(ROOT)} imports {name}")
        for name in sorted(found & FORBIDDEN_LIBRARIES.get(layer, set())):
            bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_run_one_way(layer: str) -> None:
    assert _sources(layer), f"no sources found for {layer}"
    assert violations(layer) == []


def test_the_check_sees_a_back_edge(tmp_path: Path) -> None:
    """The scanner must catch a lazy import inside a function, or a clean result proves nothing."""
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from starter.temporal import connect_from_args\n    import worker\n")
    assert _imports(sample) == {"starter", "worker"}


def test_nothing_imports_the_cli_outside_it() -> None:
    for layer in ALLOWED:
        if layer != "starter":
            assert "starter" not in ALLOWED[layer]


# The [sim] extra (pyproject.toml): the simulated world and the libraries only it uses. The worker image leaves it
# out (deploy/Dockerfile), so the product never imports it; of the CLI only `demo` and `sim` do, inside the
# command, after starter/sim_extra.py checked that it is installed.
SIM_WORLD = {"simulator", "devstack", "bench", "celpy", "moto"}
SIM_COMMANDS = {"starter/cmd_demo.py", "starter/cmd_sim.py"}


def _module_level_imports(path: Path) -> set[str]:
    """Top-level names imported when the module loads: imports inside a function body are left out."""
    names: set[str] = set()
    pending: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        pending.extend(ast.iter_child_nodes(node))
    return names


def test_the_product_never_imports_the_simulated_world() -> None:
    bad = []
    for layer in sorted(set(ALLOWED) - SIM_WORLD):
        for path in _sources(layer):
            rel = path.relative_to(ROOT).as_posix()
            found = _module_level_imports(path) if rel in SIM_COMMANDS else _imports(path)
            bad += [f"{rel} imports {name}" for name in sorted(found & SIM_WORLD)]
    assert bad == []


def test_the_module_level_scan_skips_function_bodies(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import api\nif True:\n    import celpy\ndef f():\n    from simulator.server import Simulator\n"
                      "class C:\n    async def g(self):\n        import devstack\n")
    assert _module_level_imports(sample) == {"api", "celpy"}
