"""Instance-type volume attachment limits through the worker (kubernetes-sigs/karpenter#3202; docs/semantics.md §3.5
Volume attachment limits): dev server + simulator (wired to moto) + the real worker. Nodes a and b each run one small
pod that mounts an EBS volume; either pod fits beside the other by CPU. With CSINodes that allow one EBS attachment
each, a live planner pass moves neither (each node has its one) and the Unconsolidatable Event names the limit; with
room for two, one node is consolidated."""

from __future__ import annotations

from typing import Any

import pytest
from e2e.test_node_repair_e2e import bound_pods, running_on
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool
from planning.scheduling.volume_topology import EBS_DRIVER
from telemetry.metrics import REGISTRY

pytestmark = pytest.mark.e2e
M5 = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
      {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]
GP3 = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
       "provisioner": EBS_DRIVER, "volumeBindingMode": "WaitForFirstConsumer"}


def _volume(name: str, node: str) -> list[dict[str, Any]]:
    """A bound EBS PersistentVolume and its claim, on `node`'s zone."""
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{name}"},
          "spec": {"storageClassName": "gp3", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                   "csi": {"driver": EBS_DRIVER, "volumeHandle": f"vol-{name}"},
                   "claimRef": {"namespace": "default", "name": name}},
          "status": {"phase": "Bound"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
           "spec": {"storageClassName": "gp3", "volumeName": f"pv-{name}", "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}},
           "status": {"phase": "Bound"}}
    return [pv, pvc]


def _csinode(node: str, count: int) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
            "spec": {"drivers": [{"name": EBS_DRIVER, "nodeID": f"i-{node}", "allocatable": {"count": count}}]}}


@pytest.mark.parametrize(("limit", "starts"), [(2, 1), (1, 0)], ids=["room", "full"])
async def test_a_pod_is_not_moved_to_a_node_whose_volume_limit_is_reached(temporal_client, sim_ec2, moto_endpoint,
                                                                          limit: int, starts: int) -> None:
    x, y = replica_set("x", 1, "500m"), replica_set("y", 1, "500m")
    pods = bound_pods(x, ["a"]) + bound_pods(y, ["b"])
    for p, claim in zip(pods, ("data-x", "data-y"), strict=True):
        p["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]
    objs = [node_pool("default", requirements=M5, budgets=[{"nodes": "100%"}]), GP3,
            *node_objects("a", "m5.xlarge"), *node_objects("b", "m5.xlarge"),
            _csinode("a", limit), _csinode("b", limit),
            *_volume("data-x", "a"), *_volume("data-y", "b"), x, y, *pods]
    sim_ec2.load_objects(fresh(objs))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        await wait_for(lambda: running_on(stack, "x") == ["a"] and running_on(stack, "y") == ["b"],
                       what="x on a, y on b")
        result = await stack.planner_pass()
        assert len(result.started) == starts, result
        # nodeflow's gauge of the pass: each pod was kept off the other node by its limit (the full case)
        assert REGISTRY.get_sample_value("nodeflow_scheduling_volume_limited_pods") == (0.0 if starts else 2.0)
        if not starts:  # the pod needs a new node instead, which is no cheaper: Karpenter's words, then the limit
            told = {e["involvedObject"]["name"]: e["message"] for e in stack.events()
                    if e["reason"] == "Unconsolidatable" and e["involvedObject"]["kind"] == "Node"}
            full = f"has no volume attachment left for driver {EBS_DRIVER} (1 of 1)"
            assert set(told) == {"a", "b"}, told
            for node, other, app in (("a", "b", "x"), ("b", "a", "y")):
                assert told[node].startswith(f"Can't replace with a cheaper node; pod default/{app}-"), told
                assert told[node].endswith(f": node {other} {full}"), told
