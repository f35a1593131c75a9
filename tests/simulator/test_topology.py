"""The simulator's kube-scheduler keeps hard topology spread and required anti-affinity (simulator/topology.py):
before, a spread workload landed packed on one node."""

from __future__ import annotations

from kubernetes import client
from support.sim_objects import node, pod, wait_for

from simulator.server import Simulator

APP = {"app": "web"}
SPREAD = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": APP}}]
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": APP}}]}}


def _placement(k8s: client.ApiClient, count: int) -> dict[str, str | None]:
    def bound() -> dict[str, str | None] | None:
        pods = client.CoreV1Api(k8s).list_namespaced_pod("default").items
        decided = [p for p in pods if p.spec.node_name or any(
            c.type == "PodScheduled" and c.status == "False" for c in (p.status.conditions or []))]
        return {p.metadata.name: p.spec.node_name for p in pods} if len(decided) == count else None
    return wait_for(bound, what=f"{count} pods scheduled or refused")


def test_hostname_spread_puts_one_pod_per_node_while_a_node_has_none(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("a"), node("b"), node("c"),
                      *(pod(f"web-{i}", labels=APP, topologySpreadConstraints=SPREAD) for i in range(6))])
    placed = _placement(k8s, 6)
    per_node = sorted(list(placed.values()).count(n) for n in ("a", "b", "c"))
    assert per_node == [2, 2, 2], placed  # least-allocated alone would also spread; skew keeps it exact


def test_hostname_spread_refuses_a_node_that_would_exceed_the_skew(sim: Simulator, k8s: client.ApiClient) -> None:
    # b has room for one web pod: a may hold at most one more than b, so the fourth web pod stays pending
    sim.load_objects([node("a"), node("b"), pod("hog", "b", cpu="3900m"),
                      *(pod(f"web-{i}", labels=APP, topologySpreadConstraints=SPREAD) for i in range(4))])
    placed = _placement(k8s, 5)
    webs = [where for name, where in placed.items() if name.startswith("web-")]
    assert sorted(map(str, webs)) == ["None", "a", "a", "b"], placed


def test_required_anti_affinity_leaves_the_extra_pod_pending(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("a"), node("b"), *(pod(f"web-{i}", labels=APP, affinity=ANTI) for i in range(3))])
    placed = _placement(k8s, 3)
    assert sorted(n for n in placed.values() if n) == ["a", "b"] and list(placed.values()).count(None) == 1, placed


def test_pods_without_constraints_still_pack_by_resources(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("a"), *(pod(f"web-{i}", labels=APP) for i in range(4))])
    assert set(_placement(k8s, 4).values()) == {"a"}
