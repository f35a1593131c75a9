"""CapacityBuffer end to end (docs/semantics.md §20): dev server + simulator (wired to moto) + the real worker
(run_worker, with provisioning on).

A buffer of two 1-vCPU chunks in an empty cluster: the worker's buffer controller writes its status
(ReadyForProvisioning, replicas 2), launches a node for the headroom through a ProvisioningWorkflow, and once the
node is up says the chunks fit existing capacity. No pod is ever created for the buffer. A planner pass then finds
the node empty of real pods but keeps it, with Karpenter's `Node "<node>" has buffer pods` Event; without the
buffer the same node is deleted as empty.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import capacity_buffer as cb
from api import events, labels
from bench.clusters import node_pool

pytestmark = pytest.mark.e2e  # any xdist worker (the "demo" group is for test_demo.py)
ON_DEMAND_AMD64 = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                   {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
                   {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
WORKER = {"provisioning": True, "capacity_buffer_seconds": 1.0}
TEMPLATE = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "chunk", "namespace": "default"},
            "template": {"metadata": {"labels": {"app": "headroom"}}, "spec": {"containers": [
                {"name": "pause", "image": "pause", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}
BUFFER = {"apiVersion": cb.API_VERSION, "kind": cb.KIND,
          "metadata": {"name": "headroom", "namespace": "default", "uid": "uid-buffer-headroom", "generation": 1},
          "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 2}}


def buffer(api: Any) -> dict[str, Any]:
    return k8s.CustomObjectsApi(api).get_namespaced_custom_object(cb.GROUP, cb.VERSION, "default", cb.PLURAL,
                                                                  "headroom")


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == ctype), {})


def initialized(stack: Any) -> list[str]:
    """Names of the nodes whose NodeClaim is Initialized (a consolidation candidate once consolidateAfter passed)."""
    return [c["status"]["nodeName"] for c in stack.node_claims() if any(
        x["type"] == "Initialized" and x["status"] == "True" for x in (c.get("status") or {}).get("conditions") or ())]


async def test_a_buffer_launches_headroom_and_consolidation_keeps_it(temporal_client, sim_ec2,
                                                                     moto_endpoint) -> None:
    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND_AMD64, consolidate_after="0s"),
                                TEMPLATE, BUFFER]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        ready = await wait_for(lambda: condition(b := buffer(stack.api), cb.READY_FOR_PROVISIONING)
                               .get("status") == "True" and b, timeout=30, what="ReadyForProvisioning")
        assert ready["status"]["replicas"] == 2 and ready["status"]["podTemplateRef"] == {"name": "chunk"}
        assert ready["status"]["provisioningStrategy"] == cb.ACTIVE_CAPACITY
        # two 1-vCPU chunks need two m5.large (2 vCPU less the kube and system reserve): the headroom is launched
        nodes = await wait_for(lambda: len(n := initialized(stack)) == 2 and n, timeout=60,
                               what="two initialized nodes for the headroom")
        fits = await wait_for(lambda: condition(buffer(stack.api), cb.PROVISIONING).get("status") == "True"
                              and condition(buffer(stack.api), cb.PROVISIONING), timeout=30,
                              what="Provisioning=True")
        assert fits["reason"] == cb.REASON_FITS_EXISTING
        pods = k8s.CoreV1Api(stack.api).list_pod_for_all_namespaces().items
        assert [p.metadata.name for p in pods if p.metadata.name.startswith("capacity-buffer-")] == []
        launched = {e["message"] for e in stack.events() if e["reason"] == "Launched"
                    and e["involvedObject"]["kind"] == "NodeClaim"}
        assert launched == {events.headroom_launched()}, launched  # not "for 0 pending pod(s)"

        result = await stack.planner_pass()
        assert result.started == [] and result.blocked >= 2
        assert sorted(initialized(stack)) == sorted(nodes)
        held = await wait_for(lambda: {e["message"] for e in stack.events() if e["reason"] == "Unconsolidatable"
                                       and e["involvedObject"]["kind"] == "Node"} or None, timeout=15,
                              what="the Unconsolidatable events")
        assert {events.has_buffer_pods(n) for n in nodes} <= held

        # the buffer gone, the same nodes are empty: Emptiness deletes them
        k8s.CustomObjectsApi(stack.api).delete_namespaced_custom_object(cb.GROUP, cb.VERSION, "default", cb.PLURAL,
                                                                        "headroom")
        await wait_for(lambda: not any(o["kind"] == cb.KIND for o in stack.deps.cluster.read()[0]), timeout=15,
                       what="the cache to see the buffer gone")
        again = await stack.planner_pass()
        assert again.started, "without the buffer the empty nodes are consolidated"


async def test_a_pod_that_takes_the_headroom_lands_at_once_and_the_headroom_is_launched_again(
        temporal_client, sim_ec2, moto_endpoint) -> None:
    one = {**BUFFER, "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 1}}
    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND_AMD64, consolidate_after="Never"),
                                TEMPLATE, one]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        (first,) = await wait_for(lambda: len(n := initialized(stack)) == 1 and n, timeout=60,
                                  what="the headroom node")
        await wait_for(lambda: condition(buffer(stack.api), cb.PROVISIONING).get("status") == "True", timeout=30,
                       what="Provisioning=True")
        k8s.AppsV1Api(stack.api).create_namespaced_replica_set("default", replica_set("late", 1, "1"))
        # kube-scheduler binds the pod to the headroom: no launch waits for it
        bound = await wait_for(lambda: [p.spec.node_name for p in k8s.CoreV1Api(stack.api).list_namespaced_pod(
            "default", label_selector="app=late").items if p.spec.node_name], timeout=30, what="the pod bound")
        assert bound == [first]
        # the chunk lost its place: the buffer controller launches the headroom again
        nodes = await wait_for(lambda: len(n := initialized(stack)) == 2 and n, timeout=60,
                               what="a second node for the headroom")
        await wait_for(lambda: condition(buffer(stack.api), cb.PROVISIONING).get("status") == "True", timeout=30,
                       what="Provisioning=True again")
        assert first in nodes
        nominated = [e for e in stack.events() if e["reason"] == "Nominated"]
        assert all(not e["involvedObject"]["name"].startswith("capacity-buffer-") for e in nominated)
