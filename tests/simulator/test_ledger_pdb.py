"""The ledger's PDB verdict: a removal violates a budget when the healthy pods left after it are fewer than
the desiredHealthy the disruption controller had just before it (the removed pod still counted as expected).

Each case loads a cordoned-after-start cluster (replacements stay Pending, so they never count as healthy),
removes the workload's pods one by one through the API and compares the ledger entry of every removal.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from support.sim_objects import node, pdb, pod, replicaset, wait_for

from simulator.pdb import compute_status
from simulator.server import Simulator

WEB = {"app": "web"}
WEB_PDB = ["default/web"]


def _healthy(v1: client.CoreV1Api) -> list[str]:
    return sorted(p.metadata.name for p in v1.list_namespaced_pod("default", label_selector="app=web").items
                  if p.metadata.deletion_timestamp is None and p.status.phase == "Running"
                  and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or []))


def _start(sim: Simulator, v1: client.CoreV1Api, replicas: int | None, budgets: dict[str, dict[str, Any]]) -> list[str]:
    """A node with `replicas` ReplicaSet pods (None: one bare pod) and the budgets; the node is then cordoned."""
    workload = pod("bare", "n1", labels=WEB) if replicas is None else replicaset("web", replicas, WEB)
    sim.load_objects([node("n1"), workload, *(pdb(name, WEB, **spec) for name, spec in budgets.items())])
    want = 1 if replicas is None else replicas
    names = wait_for(lambda: len(_healthy(v1)) == want and _healthy(v1), what=f"{want} healthy web pods")
    v1.patch_node("n1", {"spec": {"unschedulable": True}})
    return names


def _remove(sim: Simulator, v1: client.CoreV1Api, how: str, name: str) -> None:
    if how == "evict":
        v1.create_namespaced_pod_eviction(name, "default", client.V1Eviction(
            metadata=client.V1ObjectMeta(name=name, namespace="default")))
    elif how == "delete":
        v1.delete_namespaced_pod(name, "default")
    elif how == "force":  # a drain's deadline: grace cut to 0, the PDB bypassed
        v1.delete_namespaced_pod(name, "default", grace_period_seconds=0)
    elif how == "node-gone":
        v1.delete_node("n1")
    else:
        raise ValueError(how)


# (replicas or None for a bare pod, budgets, removals in order, the PDBs each removal must name)
CASES: dict[str, tuple[int | None, dict[str, dict[str, Any]], list[str], list[list[str]]]] = {
    "maxUnavailable-0": (3, {"web": {"maxUnavailable": 0}}, ["delete"], [WEB_PDB]),
    "maxUnavailable-1": (3, {"web": {"maxUnavailable": 1}}, ["evict", "delete"], [[], WEB_PDB]),
    "maxUnavailable-50%-of-3-rounds-up-to-2": (3, {"web": {"maxUnavailable": "50%"}},
                                               ["evict", "evict", "delete"], [[], [], WEB_PDB]),
    "minAvailable-2": (3, {"web": {"minAvailable": 2}}, ["evict", "delete"], [[], WEB_PDB]),
    "minAvailable-60%-of-4-rounds-up-to-3": (4, {"web": {"minAvailable": "60%"}}, ["evict", "delete"],
                                             [[], WEB_PDB]),
    "one-replica-maxUnavailable-0-forced": (1, {"web": {"maxUnavailable": 0}}, ["force"], [WEB_PDB]),
    "one-replica-maxUnavailable-0%-node-gone": (1, {"web": {"maxUnavailable": "0%"}}, ["node-gone"], [WEB_PDB]),
    "one-replica-minAvailable-50%": (1, {"web": {"minAvailable": "50%"}}, ["delete"], [WEB_PDB]),
    "one-replica-maxUnavailable-10%-allows-it": (1, {"web": {"maxUnavailable": "10%"}}, ["evict"], [[]]),
    "bare-pod-maxUnavailable-0-forced": (None, {"web": {"maxUnavailable": 0}}, ["force"], [WEB_PDB]),
    "bare-pod-minAvailable-100%": (None, {"web": {"minAvailable": "100%"}}, ["delete"], [WEB_PDB]),
    "bare-pod-minAvailable-0": (None, {"web": {"minAvailable": 0}}, ["delete"], [[]]),
    "two-pdbs-both-named": (None, {"b": {"minAvailable": 1}, "a": {"maxUnavailable": 0}}, ["delete"],
                            [["default/a", "default/b"]]),
    "two-pdbs-one-named": (2, {"a": {"maxUnavailable": 1}, "b": {"minAvailable": 2}}, ["delete"], [["default/b"]]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_ledger_names_the_budgets_each_removal_broke(case: str, sim: Simulator, k8s: client.ApiClient) -> None:
    replicas, budgets, removals, expected = CASES[case]
    v1 = client.CoreV1Api(k8s)
    names = _start(sim, v1, replicas, budgets)
    for how, name in zip(removals, names, strict=False):
        _remove(sim, v1, how, name)
    entries = sim.ledger()
    assert [e["pod"] for e in entries] == [f"default/{n}" for n in names[:len(removals)]]
    assert [e["violated"] for e in entries] == expected
    assert all(e["healthy"] for e in entries)
    stats = sim.stats()
    assert stats["pdbViolationsTotal"] == sum(1 for v in expected if v)
    cause = {"evict": "eviction", "delete": "delete", "force": "grace-deadline", "node-gone": "node-gone"}
    assert [e["cause"] for e in entries] == [cause[h] for h in removals]


def test_removing_an_unhealthy_pod_violates_nothing(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    _start(sim, v1, None, {"web": {"maxUnavailable": 0}})
    sim.world.set_node_ready("n1", False)
    wait_for(lambda: not _healthy(v1), what="the pod on a NotReady node is not Ready")
    v1.delete_namespaced_pod("bare", "default", grace_period_seconds=0)
    assert [(e["healthy"], e["violated"]) for e in sim.ledger()] == [(False, [])]
    assert sim.stats()["pdbViolationsTotal"] == 0


def test_percentages_round_up_exactly() -> None:
    """7% of 100 is 7 (Kubernetes multiplies before dividing); a float 0.07 * 100 would round up to 8."""
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs", "controller": True}
    pods = [pod("web-0", "n1", labels=WEB, owner=owner)]
    for spec, desired in (({"minAvailable": "7%"}, 7), ({"maxUnavailable": "7%"}, 93),
                          ({"minAvailable": "33%"}, 33), ({"maxUnavailable": "0.5%"}, 99)):
        status = compute_status(pdb("web", WEB, **spec), pods, lambda _ns, _ref: 100)
        assert (status["expectedPods"], status["desiredHealthy"]) == (100, desired), spec
