"""Pod deletion cost through the worker (feature gate PodDeletionCostManagement, kubernetes-sigs/karpenter#2894;
docs/semantics.md §3.6): dev server + simulator (wired to moto) + the real worker with the gate on. The worker's
leader marks the ReplicaSet pods of the node consolidation would take first with the lower cost; scaling the
ReplicaSet down then empties that node, and the writes are counted."""

from __future__ import annotations

from typing import Any

import pytest
from e2e.test_node_repair_e2e import bound_pods, running_on
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool
from telemetry.metrics import REGISTRY

pytestmark = pytest.mark.e2e
WORKER = {"pod_deletion_cost": True, "pod_deletion_cost_seconds": 0.5}


def _writes() -> float:
    return sum(s.value for m in REGISTRY.collect() for s in m.samples
               if s.name == "nodeflow_pod_deletion_cost_writes_total")


def _costs(api: Any) -> dict[str, str]:
    return {p.metadata.name: (p.metadata.annotations or {}).get(labels.POD_DELETION_COST_ANNOTATION, "")
            for p in k8s.CoreV1Api(api).list_namespaced_pod("default", label_selector="app=web").items
            if not p.metadata.deletion_timestamp}


async def test_a_scale_down_empties_the_node_nodeflow_would_take_first(temporal_client, sim_ec2,
                                                                      moto_endpoint) -> None:
    web = replica_set("web", 4, "500m")
    objs: list[dict[str, Any]] = [node_pool("default"), *node_objects("big", "m5.4xlarge"),
                                  *node_objects("small", "m5.large"), web,
                                  *bound_pods(web, ["big", "big", "small", "small"])]
    sim_ec2.load_objects(fresh(objs))
    before = _writes()
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        await wait_for(lambda: sorted(running_on(stack, "web")) == ["big", "big", "small", "small"],
                       what="web running on big and small")
        costs = await wait_for(lambda: (c := _costs(stack.api)) and all(c.values()) and c, timeout=30,
                               what="every web pod marked")
        on = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in bound_pods(web, ["big", "big", "small", "small"])}
        big = {int(costs[n]) for n, node in on.items() if node == "big"}
        small = {int(costs[n]) for n, node in on.items() if node == "small"}
        assert max(big) < min(small) < 0  # the dearer node is consolidation's first: its pods go first
        assert _writes() >= before + 4
        k8s.AppsV1Api(stack.api).patch_namespaced_replica_set("web", "default", {"spec": {"replicas": 2}})
        await wait_for(lambda: running_on(stack, "web") == ["small", "small"], timeout=30,
                       what="the scale-down emptied big")
