"""Imports run one way (docs/architecture.md): each package may import only the layers below it.

Every import counts, also one inside a function, because a lazy import is how a back edge hides.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("layering")  # one worker: `_tree` parses each file once for all tests
OURS = {"api", "planning", "contracts", "gateways", "workflows", "activities", "client", "runtime", "telemetry",
        "devstack", "simulator", "starter", "bench", "worker"}

# What each layer may import of ours (itself always). `contracts` holds the Temporal payloads that workflows,
# activities and clients exchange, so workflows import activities (to name their methods) and activities never
# import workflows: no exception runs back up. `gateways` holds the clients of the world outside (Kubernetes, the
# EC2 cloud provider, instance discovery and prices, SQS) that activities and the runtime take by injection.
ALLOWED: dict[str, set[str]] = {
    "telemetry": set(),
    "api": set(),
    "planning": {"api"},
    "contracts": {"api", "planning"},
    "gateways": {"api", "contracts", "telemetry"},
    "workflows": {"api", "planning", "contracts", "activities", "telemetry"},
    "activities": {"api", "planning", "contracts", "gateways", "telemetry"},
    "client": {"api", "planning", "contracts", "workflows", "activities", "telemetry"},
    "runtime": {"api", "planning", "contracts", "gateways", "workflows", "activities", "client", "telemetry"},
    "worker": {"api", "contracts", "workflows", "client", "runtime", "telemetry"},
    "simulator": {"api"},
    "devstack": {"api", "contracts", "gateways", "workflows", "client", "runtime", "simulator", "telemetry"},
    "starter": OURS - {"bench", "worker"},
}
# What a pure layer must never import (docs/architecture.md §2): no Temporal, Kubernetes or AWS in api/, planning/.
FORBIDDEN_LIBRARIES = {"api": {"temporalio", "kubernetes", "boto3", "botocore"},
                       "planning": {"temporalio", "kubernetes", "boto3", "botocore"}}


@cache
def _tree(path: Path) -> ast.Module:
    """Each file parsed once for every test of the module (the module runs on one xdist worker)."""
    return ast.parse(path.read_text(), str(path))


def _sources(layer: str) -> list[Path]:
    if layer == "worker":
        return [ROOT / "worker.py"]
    return sorted((ROOT / layer).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
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
    pending: list[ast.AST] = [_tree(path)]
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


# Import circles between modules, counting imports inside functions and under `if TYPE_CHECKING:` (a lazy import
# hides a circle, it does not remove it): none is allowed.


def _module_of(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, root: Path, known: set[str]) -> set[str]:
    """The project's modules that `path` imports anywhere in it: `from a import b` is a.b when b is a module."""
    module = _module_of(path, root).split(".")
    package = module if path.name == "__init__.py" else module[:-1]
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = [*package[:len(package) - node.level + 1], node.module] if node.level else [node.module]
            base = ".".join(part for part in parts if part)
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    resolved = set()
    for name in found:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            resolved.add(name)
    return resolved


def import_circles(root: Path, layers: set[str]) -> set[frozenset[str]]:
    """Strongly connected sets of two or more modules (Tarjan), as paths relative to `root`."""
    files = {}
    for layer in layers:
        paths = [root / f"{layer}.py"] if (root / f"{layer}.py").is_file() else sorted((root / layer).rglob("*.py"))
        files |= {_module_of(path, root): path for path in paths}
    graph = {name: _imported_modules(path, root, set(files)) - {name} for name, path in files.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: set[frozenset[str]] = set()

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for nxt in graph[name]:
            if nxt not in index:
                visit(nxt)
                low[name] = min(low[name], low[nxt])
            elif nxt in stack:
                low[name] = min(low[name], index[nxt])
        if low[name] == index[name]:
            members = []
            while not members or members[-1] != name:
                members.append(stack.pop())
            if len(members) > 1:
                circles.add(frozenset(files[m].relative_to(root).as_posix() for m in members))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return circles


def test_no_import_circles() -> None:
    assert sorted(map(sorted, import_circles(ROOT, OURS))) == []


def test_the_circle_check_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("def f():\n    from pkg.b import g\n")
    (tmp_path / "pkg" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    (tmp_path / "pkg" / "d.py").write_text("from pkg import a\n")
    assert import_circles(tmp_path, {"pkg"}) == {frozenset({"pkg/a.py", "pkg/b.py", "pkg/c.py"})}


# planning/'s floors (docs/architecture.md §1.1): a module imports modules on its own floor or below. Floors are of
# modules: a package holds its concern's vocabulary on a lower floor than the decisions built on it.
PLANNING_FLOORS: dict[str, int] = {
    "planning/cluster.py": 1, "planning/selectors.py": 1, "planning/pod_requests.py": 1,
    "planning/capacity_buffers.py": 1, "planning/identity_memo.py": 1, "planning/node_pods_memo.py": 1,
    "planning/pass_store.py": 1, "planning/disruption/method_names.py": 1,
    "planning/scheduling/pod_constraints.py": 1, "planning/scheduling/volume_topology.py": 1,
    "planning/scheduling/pod_affinity.py": 1, "planning/scheduling/host_ports.py": 1,
    "planning/scheduling/topology_spread.py": 1, "planning/scheduling/default_spread.py": 1,
    "planning/scheduling/process_setting.py": 1,
    "planning/pricing/overlays.py": 1,
    "planning/pricing/unavailable_offerings.py": 1, "planning/pricing/reservations.py": 1,
    "planning/scheduling/": 2,
    "planning/lifecycle/": 3, "planning/pricing/": 3,
    "planning/disruption/commands.py": 3, "planning/disruption/candidates.py": 3, "planning/disruption/method.py": 3,
    "planning/disruption/validation.py": 3, "planning/disruption/exclusions.py": 3,
    "planning/disruption/nomination.py": 3, "planning/disruption/repair.py": 3,
    "planning/policies/view.py": 3, "planning/policies/calendar.py": 3, "planning/policies/cost_limits.py": 3,
    "planning/policies/deprecated_pools.py": 3, "planning/policies/launch_controls.py": 3,
    "planning/policies/expiry_jitter.py": 3, "planning/policies/pod_annotations.py": 3,
    "planning/disruption/": 4, "planning/policies/": 4, "planning/provisioning/": 4,
    "planning/planner/": 5,
    "planning/fleet/": 3,
    "planning/__init__.py": 0,
}


def planning_floor(path: str) -> int:
    """The floor of a planning module: its own entry, else its package's."""
    if path in PLANNING_FLOORS:
        return PLANNING_FLOORS[path]
    return PLANNING_FLOORS[path.rsplit("/", 1)[0] + "/"]


def test_planning_imports_only_its_floor_or_below() -> None:
    files = {_module_of(path, ROOT): path for path in sorted((ROOT / "planning").rglob("*.py"))}
    bad = []
    for name, path in files.items():
        rel = path.relative_to(ROOT).as_posix()
        for target in sorted(_imported_modules(path, ROOT, set(files)) - {name}):
            dest = files[target].relative_to(ROOT).as_posix()
            if planning_floor(dest) > planning_floor(rel):
                bad.append(f"{rel} (floor {planning_floor(rel)}) imports {dest} (floor {planning_floor(dest)})")
    assert bad == []


# Imports of our own modules inside a function. A lazy import hides a circle or a cost, so a file keeps one only for a
# reason named here: a measured start-up cost or an optional extra. Each file's comment says the same where the
# imports are.
_HELP = ("`nodeflow --help` imports every command to build the parser: 0.13 s without pydantic, temporalio and "
         "kubernetes, 0.83 s with them (farm-bench, median), so what loads them is imported where it is used")
_SIM = "the simulated world is the [sim] extra, imported after starter/sim_extra.py checked it; and " + _HELP
LAZY_IMPORTS: dict[str, str] = {
    **{f"starter/{name}.py": _HELP for name in (
        "cmd_budgets", "cmd_cancel", "cmd_fleet", "cmd_force", "cmd_pause", "cmd_rollout", "cmd_status",
        "cmd_instance_types", "cmd_plan", "cmd_validate", "demo_nodeclass", "live_cluster", "status_watch",
        "validate_policies")},
    "starter/cmd_demo.py": _SIM + "; the demo's scripted moments (starter/demo_capacity.py, demo_nodeclass.py) too",
    "starter/cmd_sim.py": _SIM,
    "bench/planner.py": "the simulator's generator is optional (bench.planner.local_cluster without it)",
    "bench/planner_live.py": "only the serving subprocess loads the bench's worker (bench/planner_live_worker.py)",
    "bench/planner_live_worker.py": "the discovery clients (boto3) load only when the bench discovers instance types",
}


def function_level_imports(path: Path) -> set[str]:
    """Our top-level packages that `path` imports inside a function body (or a lambda)."""
    found: set[str] = set()

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, ast.Import):
                found.update(alias.name.split(".")[0] for alias in child.names)
            elif inside and isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.add(child.module.split(".")[0])
            visit(child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(_tree(path), False)
    return found & OURS


def test_our_imports_sit_at_the_top_unless_a_reason_is_named() -> None:
    lazy = {path.relative_to(ROOT).as_posix() for layer in sorted(OURS) for path in _sources(layer)
            if function_level_imports(path)}
    assert sorted(lazy - set(LAZY_IMPORTS)) == [], "import at the top, or name the reason in LAZY_IMPORTS"
    assert sorted(set(LAZY_IMPORTS) - lazy) == [], "no import of ours inside a function left: remove the entry"


def test_the_lazy_import_check_sees_methods_and_lambdas(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import api\nclass C:\n    async def f(self):\n        from starter import output\n"
                      "g = lambda: __import__('x')\ndef h():\n    import json\n    k = lambda: None\n"
                      "    def inner():\n        import client.connection\n")
    assert function_level_imports(sample) == {"starter", "client"}

