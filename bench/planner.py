"""Planner pass benchmark: generated clusters of 100, 1,000 and 5,000 nodes with 15 pods per node.

Prints, per size, the time of one full pass with every method computed (`run_pass(compute_all=True)`:
cluster view, budgets, candidates, expiration, emptiness, drift, multi- and single-node consolidation),
p50 of 5 runs, and the process's peak memory. Targets on 2 cores: 1,000 nodes < 5 s, 5,000 < 30 s, < 2 GiB.

    .venv/bin/python bench/planner.py [--sizes 100,1000,5000] [--runs 5] [--json]

Clusters come from `simulator.generate.generate_cluster` when it exists, else from the generator below.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from api import labels as L
from api.catalog import InstanceType, load_default_catalog
from api.quantity import format_cpu
from api.snapshot import Snapshot, SnapshotError
from bench.instance_discovery import offline_catalog
from planning.planner.plan import run_pass

AT = datetime.now(UTC).replace(microsecond=0)
TYPES = ("m5.xlarge", "m5.2xlarge", "c5.2xlarge", "r5.xlarge", "m5.4xlarge")
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
POD_SIZES = ((0.1, 0.25), (0.25, 0.5), (0.25, 1.0), (0.5, 1.0), (0.5, 2.0), (1.0, 2.0))


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_pool(packed: bool) -> dict[str, Any]:
    """The one NodePool every generated node belongs to; `packed` pins it to t3.xlarge so that no bigger,
    cheaper-per-core replacement exists."""
    pool: dict[str, Any] = {
        "apiVersion": L.API_VERSION, "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"requirements": [
            {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}},
            "disruption": {"consolidateAfter": "30s", "budgets": [{"nodes": "10%"}]}}}
    if packed:
        pool["spec"]["template"]["spec"]["requirements"].append(
            {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["t3.xlarge"]})
    return pool


def _pdbs(rng: random.Random, deployments: int) -> list[dict[str, Any]]:
    """A PDB on every tenth deployment, a third of them allowing no disruption, so budgets block some moves."""
    return [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": f"app-{d}", "namespace": "default"},
             "spec": {"selector": {"matchLabels": {"app": f"app-{d}"}}, "maxUnavailable": 1},
             "status": {"disruptionsAllowed": rng.choice((0, 1, 1))}}
            for d in range(0, deployments, 10)]


def _node_and_claim(i: int, it: InstanceType, drifted: bool, created: datetime) -> list[dict[str, Any]]:
    """Node `node-{i}` and its NodeClaim (same labels and providerID), the claim marked Drifted when asked."""
    name = f"node-{i:05d}"
    zone = ZONES[i % 3]
    labels = {L.NODEPOOL_LABEL: "default", L.INSTANCE_TYPE_LABEL: it.name, L.CAPACITY_TYPE_LABEL: "on-demand",
              L.ZONE_LABEL: zone, L.ARCH_LABEL: it.arch, L.HOSTNAME_LABEL: name, L.INITIALIZED_LABEL: "true"}
    alloc = {"cpu": format_cpu(it.cpu_cores), "memory": it.memory, "pods": str(it.pods)}
    pid = f"aws:///{zone}/i-{i:017x}"
    conditions = [{"type": "Initialized", "status": "True", "lastTransitionTime": _ts(created)}]
    if drifted:
        conditions.append({"type": "Drifted", "status": "True", "reason": "NodePoolDrifted",
                           "lastTransitionTime": _ts(created)})
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels, "creationTimestamp": _ts(created)},
            "spec": {"providerID": pid},
            "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]}}
    claim = {"apiVersion": L.API_VERSION, "kind": "NodeClaim",
             "metadata": {"name": name, "uid": f"uid-claim-{name}", "labels": dict(labels),
                          "creationTimestamp": _ts(created)},
             "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
             "status": {"nodeName": name, "providerID": pid, "conditions": conditions}}
    return [node, claim]


def _pod(i: int, j: int, node: str, app: str, cpu: float, mem_b: int, created: datetime) -> dict[str, Any]:
    """Running pod j on node i; j == 0 is the node's DaemonSet pod, the others belong to a ReplicaSet, and
    apps ending in 7 carry a zone spread constraint so topology is part of the simulation."""
    daemon = j == 0
    owner_kind = "DaemonSet" if daemon else "ReplicaSet"
    spec: dict[str, Any] = {"nodeName": node, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": format_cpu(max(cpu, 0.001)), "memory": str(mem_b)}}}]}
    if not daemon and app.endswith("7"):
        spec["topologySpreadConstraints"] = [{"maxSkew": 5, "topologyKey": L.ZONE_LABEL,
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": app}}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{app}-{i}-{j}", "namespace": "default", "uid": f"uid-p-{i}-{j}",
                         "labels": {"app": app},
                         "ownerReferences": [{"kind": owner_kind, "name": app, "uid": f"o-{app}", "controller": True}]},
            "spec": spec, "status": {"phase": "Running", "startTime": _ts(created),
                                     "conditions": [{"type": "Ready", "status": "True"}]}}


def _node_pods(rng: random.Random, i: int, it: InstanceType, pods_per_node: int, deployments: int, packed: bool,
               created: datetime) -> list[dict[str, Any]]:
    """The pods of node i: a few nodes keep only their DaemonSet pod (emptiness has work), the rest fill
    30-85% of the CPU (98% of CPU and memory when `packed`), each pod taking at most its share of what is left."""
    node = f"node-{i:05d}"
    empty = rng.random() < 0.01 and not packed
    budget_cpu = it.cpu_cores * (0.98 if packed else rng.uniform(0.3, 0.85))
    budget_mem = it.memory_bytes * (0.98 if packed else 0.85)
    pods: list[dict[str, Any]] = []
    for j in range(pods_per_node):
        daemon = j == 0
        if empty and not daemon:
            break
        cpu, mem = (0.05, 0.125) if daemon else POD_SIZES[rng.randrange(len(POD_SIZES))]
        share_cpu, share_mem = budget_cpu / max(1, pods_per_node - j), budget_mem / max(1, pods_per_node - j)
        cpu = share_cpu if packed and not daemon else min(cpu, share_cpu)
        budget_cpu -= cpu
        mem_b = int(share_mem) if packed and not daemon else min(int(mem * 2**30), int(share_mem))
        budget_mem -= mem_b
        app = "node-exporter" if daemon else f"app-{rng.randrange(deployments)}"
        pods.append(_pod(i, j, node, app, cpu, mem_b, created))
    return pods


def local_cluster(nodes: int, pods_per_node: int, seed: int, packed: bool = False) -> list[dict[str, Any]]:
    """Nodes of a few types over 3 zones, pods_per_node pods each (one DaemonSet pod), deployments with PDBs
    and zone spread, a few drifted and a few empty nodes: every method has work.

    `packed`: the worst case for the planner — every node is the cheapest type for its load and ~98% full,
    nothing is empty or drifted, so every candidate is simulated and none yields a command."""
    rng = random.Random(seed)
    catalog = load_default_catalog()
    created = AT - timedelta(days=3)
    deployments = max(1, nodes // 5)
    objs: list[dict[str, Any]] = [_node_pool(packed), *_pdbs(rng, deployments)]
    for i in range(nodes):
        it = catalog.get("t3.xlarge" if packed else TYPES[i % len(TYPES)])
        assert it is not None
        drifted = rng.random() < 0.02 and not packed  # drawn even when packed: the same seed, the same cluster
        objs += _node_and_claim(i, it, drifted, created)
        objs += _node_pods(rng, i, it, pods_per_node, deployments, packed, created)
    return objs


def generate(nodes: int, pods_per_node: int, seed: int) -> tuple[list[dict[str, Any]], str]:
    try:
        from simulator.generate import generate_cluster  # type: ignore[import-not-found]
    except ImportError:
        return local_cluster(nodes, pods_per_node, seed), "bench.planner.local_cluster"
    # fewer do-not-disrupt pods and zero-disruption PDBs than the generator's defaults, so that most nodes
    # are consolidation candidates and every method has real work to do
    objs = generate_cluster(nodes, pods_per_node, seed, do_not_disrupt_fraction=0.002, blocking_pdb_fraction=0.01)
    return objs, "simulator.generate.generate_cluster"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench(size: int, runs: int, pods_per_node: int = 15, packed: bool = False, catalog: Any = None,
          catalog_name: str = "bundled") -> dict[str, Any]:

    if packed:
        objs, source = local_cluster(size, pods_per_node, size, packed=True), "bench.planner.local_cluster(packed)"
    else:
        objs, source = generate(size, pods_per_node, seed=size)
    t0 = time.perf_counter()
    try:
        snapshot = Snapshot.from_objects(objs)
    except SnapshotError as exc:  # e.g. a generator name collision: fall back rather than report nothing
        print(f"note: {source} gave an unusable snapshot ({exc}); using the local generator", file=sys.stderr)
        objs, source = local_cluster(size, pods_per_node, size), "bench.planner.local_cluster"
        t0 = time.perf_counter()
        snapshot = Snapshot.from_objects(objs)
    load_s = time.perf_counter() - t0
    times, cpu_times = [], []
    outcome = None
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        outcome = run_pass(snapshot, AT, catalog, compute_all=True)
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    assert outcome is not None
    return {
        "nodes": size, "pods": len(snapshot.pods), "generator": source, "catalog": catalog_name,
        "instanceTypes": len((catalog or load_default_catalog()).instance_types),
        "snapshotLoadSeconds": round(load_s, 3),
        "passSecondsP50": round(statistics.median(times), 3), "passSecondsMax": round(max(times), 3),
        "passCpuSecondsP50": round(statistics.median(cpu_times), 3),
        "commands": [f"{c.method}:{len(c.nodes)}" for c in outcome.commands], "computed": outcome.computed,
        "eligible": outcome.eligible,
        "blocked": len(outcome.blocked), "peakRssMiB": round(peak_rss_mib(), 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--packed", action="store_true", help="worst case: full nodes, no command possible")
    ap.add_argument("--catalogs", default="bundled",
                    help="comma-separated: bundled (49 types), discovered (every us-east-1 type, moto's data and the "
                         "bundled price table; bench/instance_discovery.py offline_catalog), side by side")
    args = ap.parse_args(argv)
    rows = []
    catalogs = {"bundled": None}
    if "discovered" in args.catalogs.split(","):
        catalogs["discovered"] = offline_catalog("us-east-1")
    for size, name in ((int(s), c) for s in args.sizes.split(",") for c in args.catalogs.split(",")):
        row = bench(size, args.runs, packed=args.packed, catalog=catalogs[name], catalog_name=name)
        rows.append(row)
        if not args.json:
            print(f"{name:>10} ({row['instanceTypes']} types) {row['nodes']:>6} nodes {row['pods']:>6} pods  "
                  f"pass p50 {row['passSecondsP50']:>7.3f}s "
                  f"(max {row['passSecondsMax']:.3f}s, cpu {row['passCpuSecondsP50']:.3f}s)  "
                  f"load {row['snapshotLoadSeconds']:.2f}s  "
                  f"peak RSS {row['peakRssMiB']:.0f} MiB  commands {row['commands']}  eligible {row['eligible']}",
                  flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
