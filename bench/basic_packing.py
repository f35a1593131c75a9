"""Decision-only: the provisioning decision for the scale-out of Karpenter's performance suite's `basic` scenario
(500 pods of 900m / 3100Mi, 500 of 3500m / 28Gi) on the suite's NodePool (`karpenter.k8s.aws/instance-cpu Lt 32`,
on-demand, amd64), the type each NodeClaim launches as (on-demand CreateFleet `lowest-price`: the cheapest of its
options, as devstack/moto_fleet.py answers), and the reserved utilization of the nodes that come up as
bench/karpenter_verdict.py computes it (the mean over nodes of requests / allocatable), on one process, no
servers. Explains basic's memory utilization (docs/benchmarks.md, "Memory utilization in basic").

The catalog is the one the worker discovers from the EC2 stand-in (moto's us-east-1 types and zones, the bundled
on-demand price table the devstack's Pricing stand-in serves: bench.instance_discovery.offline_catalog);
`--bundled` uses api/data/catalog.yaml instead. `--batches N` splits the pods into N provisioning batches in
arrival order, each seeing the claims of the earlier ones as launching (the intake's 1 s idle / 10 s max windows).

    .venv/bin/python -m bench.basic_packing [--bundled] [--batches N] [--fill-policy CostAware|Greedy] [--json]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from api import labels as L
from api.catalog import InstanceType, InstanceTypeCatalog, load_default_catalog
from api.quantity import parse_cpu, parse_memory
from api.snapshot import Snapshot
from bench.instance_discovery import offline_catalog
from bench.karpenter_scenarios import SCENARIOS, Workload
from bench.karpenter_verdict import reserved_utilization
from bench.karpenter_world import POOL, node_pool
from devstack.demo_aws import node_class_object
from planning.cluster import Cluster
from planning.provisioning.provisioner import decide
from planning.scheduling.fill_policy import FillPolicy, fill_policy
from simulator.kubelet_resources import Machine, node_resources

REGION = "us-east-1"


def pending_pods(workloads: tuple[Workload, ...]) -> list[dict[str, Any]]:
    """The scenario's pods, pending and unbound, interleaved as two ReplicaSets create them."""
    rows: list[tuple[int, Workload]] = [(i, w) for w in workloads for i in range(w.replicas)]
    rows.sort(key=lambda r: r[0])
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{w.name}-{i}", "namespace": "default", "uid": f"{w.name}-{i}",
                          "labels": {"app": w.name}},
             "spec": {"containers": [{"name": "main", "image": "registry.example/app:1",
                                      "resources": {"requests": {"cpu": w.cpu, "memory": w.memory}}}]},
             "status": {"phase": "Pending"}} for i, w in rows]


def launched_claim(n: int, itype: str, at: datetime) -> dict[str, Any]:
    """A NodeClaim launched as `itype` and not registered yet (what a later batch sees in flight)."""
    return {"apiVersion": L.API_VERSION, "kind": "NodeClaim",
            "metadata": {"name": f"default-{n}", "uid": f"claim-{n}", "creationTimestamp": at.isoformat(),
                         "labels": {L.NODEPOOL_LABEL: POOL, L.INSTANCE_TYPE_LABEL: itype}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": [itype]}]},
            "status": {"conditions": [{"type": "Launched", "status": "True"},
                                      {"type": "Registered", "status": "Unknown"}]}}


def suite_pool(cpu_below: int = 32) -> dict[str, Any]:
    """bench/karpenter_world.py's NodePool, its `instance-cpu Lt` bound moved to `cpu_below` (32: the suite's)."""
    pool = node_pool()
    for req in pool["spec"]["template"]["spec"]["requirements"]:
        if req["operator"] == "Lt":
            req["values"] = [str(cpu_below)]
    return pool


def ready_node_class() -> dict[str, Any]:
    """The suite's EC2NodeClass (the demo's: AL2023, no kubelet block), resolved."""
    return {**node_class_object("default"), "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


@dataclass
class Node:
    """A node that comes up: its launched type, its pods' requests and its allocatable."""

    itype: str
    options: list[str]
    price: float  # $/h of the launched type
    cpu_req: float
    mem_req: int
    cpu_alloc: float  # as the planner estimates it (Karpenter's: VM memory overhead 7.5%, kube-reserved, eviction)
    mem_alloc: int
    cpu_kubelet: float  # as the simulator's kubelet reports it (the machine's memory, less kube-reserved, eviction)
    mem_kubelet: int
    pods: Counter[str]  # workload -> pods
    uids: list[str]


def kubelet_allocatable(it: InstanceType) -> tuple[float, int]:
    """(cpu, memory) a node of `it` reports (simulator/kubelet_resources.py, the AMI's defaults, no kubelet block)."""
    machine = Machine(cpu=it.cpu_cores, memory=it.memory_bytes, ephemeral_storage=parse_memory(it.ephemeral_storage),
                      eni_pods=it.pods)
    _, alloc = node_resources(machine, {})
    return parse_cpu(alloc["cpu"]), parse_memory(alloc["memory"])


def scale_out(catalog: InstanceTypeCatalog, batches: int = 1, cpu_below: int = 32) -> list[Node]:
    """Provision the basic scenario's pods in `batches` batches with planning.provisioning.provisioner.decide;
    each launch comes up as its cheapest option (on-demand lowest-price)."""
    scenario = SCENARIOS["basic"]
    pods = pending_pods(scenario.workloads)
    requests = {p["metadata"]["uid"]: p["spec"]["containers"][0]["resources"]["requests"] for p in pods}
    base = [ready_node_class(), suite_pool(cpu_below)]
    at = datetime.now(UTC)
    claims: list[dict[str, Any]] = []
    nodes: list[Node] = []
    size = -(-len(pods) // batches)
    for b in range(batches):
        batch = [p["metadata"]["uid"] for p in pods[b * size:(b + 1) * size]]
        arrived = pods[:(b + 1) * size]
        # the earlier batches' pods are pending still (their nodes are launching): they take their room first
        snapshot = Snapshot.from_objects(base + claims + arrived)
        decision = decide(snapshot, catalog, pods=batch, at=at)
        cluster = Cluster.from_snapshot(snapshot, catalog)
        for launch in decision.launches:
            itype = launch.replacement.instance_types[0]
            it = catalog.get(itype)
            assert it is not None, itype
            cpu, mem, _, _ = cluster.new_node_allocatable(it, "default")
            uids = [k.split("/", 1)[1] for k in launch.pods]
            nodes.append(Node(itype, list(launch.replacement.instance_types), launch.replacement.price,
                              sum(parse_cpu(requests[u]["cpu"]) for u in uids),
                              sum(parse_memory(requests[u]["memory"]) for u in uids), cpu, mem,
                              *kubelet_allocatable(it), Counter(u.rsplit("-", 1)[0] for u in uids), uids))
            claims.append(launched_claim(len(claims), itype, at))
        for key, target in decision.nominated.items():  # a pod of this batch onto an earlier batch's claim
            node, uid = nodes[int(target.rstrip(">").rsplit("-", 1)[1])], key.split("/", 1)[1]
            node.cpu_req += parse_cpu(requests[uid]["cpu"])
            node.mem_req += parse_memory(requests[uid]["memory"])
            node.pods[uid.rsplit("-", 1)[0]] += 1
            node.uids.append(uid)
    return nodes


def utilization(nodes: list[Node]) -> dict[str, float]:
    """The bench's figure (bench/karpenter_verdict.py: the mean over nodes of requests / allocatable) against the
    allocatable the kubelet reports and against the planner's estimate, and the pooled memory figure (sum / sum)."""
    cpu, mem = reserved_utilization([(n.cpu_req, n.cpu_kubelet, n.mem_req, n.mem_kubelet) for n in nodes])
    est_cpu, est_mem = reserved_utilization([(n.cpu_req, n.cpu_alloc, n.mem_req, n.mem_alloc) for n in nodes])
    return {"cpuUtil": round(cpu, 3), "memoryUtil": round(mem, 3),
            "cpuUtilEstimated": round(est_cpu, 3), "memoryUtilEstimated": round(est_mem, 3),
            "memoryUtilPooled": round(sum(n.mem_req for n in nodes) / sum(n.mem_kubelet for n in nodes), 3)}


def summary(nodes: list[Node]) -> dict[str, Any]:
    """Nodes, utilization, and the nodes by (launched type, small pods, large pods)."""
    shapes: Counter[tuple[str, int, int]] = Counter()
    for n in nodes:
        shapes[(n.itype, n.pods["small-resource-app"], n.pods["large-resource-app"])] += 1
    rows = [{"type": t, "small": s, "large": g, "nodes": c} for (t, s, g), c in shapes.most_common()]
    return {"nodes": len(nodes), "pricePerHour": round(sum(n.price for n in nodes), 2), **utilization(nodes),
            "shapes": rows}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="basic's scale-out, decision only: nodes and reserved utilization")
    ap.add_argument("--bundled", action="store_true", help="the bundled 48-type catalog instead of discovery")
    ap.add_argument("--batches", type=int, default=1, help="provisioning batches the pods arrive in")
    ap.add_argument("--cpu-below", type=int, default=32, help="the pool's instance-cpu Lt bound (suite: 32)")
    ap.add_argument("--fill-policy", choices=[p.value for p in FillPolicy], default=FillPolicy.COST_AWARE.value,
                    help="how far a new node fills (planning/scheduling/fill_policy.py; Greedy: Karpenter's)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    catalog = load_default_catalog() if args.bundled else offline_catalog(REGION)
    with fill_policy(FillPolicy(args.fill_policy)):
        out = summary(scale_out(catalog, args.batches, args.cpu_below))
    print(json.dumps(out, indent=1) if args.json else json.dumps(out))


if __name__ == "__main__":
    main()
