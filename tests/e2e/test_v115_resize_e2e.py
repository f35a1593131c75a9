"""In-place pod resize through the worker (RFC kubernetes-sigs/karpenter#3037, kubernetes-sigs/karpenter#3065;
docs/semantics.md §3.5): dev server + simulator (wired to moto) + the real worker. Node a's pod asks for 1 CPU in its
spec, which fits beside b's 2-CPU pod; once the kubelet reports it resized to 3 CPU (`allocatedResources`), a live
planner pass no longer moves it there, and tells the node why (Unconsolidatable)."""

from __future__ import annotations

import pytest
from e2e.test_node_repair_e2e import bound_pods, running_on
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool
from telemetry.metrics import REGISTRY

pytestmark = pytest.mark.e2e
M5 = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
      {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "m5.xlarge"]}]


@pytest.mark.parametrize("resized", [False, True], ids=["spec", "resized"])
async def test_a_resized_pod_is_not_moved_where_only_its_spec_fits(temporal_client, sim_ec2, moto_endpoint,
                                                                   resized: bool) -> None:
    small, big = replica_set("small", 1, "1"), replica_set("big", 1, "2")
    objs = [node_pool("default", requirements=M5, budgets=[{"nodes": "100%"}]),
            *node_objects("a", "m5.xlarge"), *node_objects("b", "m5.xlarge"), small, big,
            *bound_pods(small, ["a"]), *bound_pods(big, ["b"])]
    sim_ec2.load_objects(fresh(objs))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        await wait_for(lambda: running_on(stack, "small") == ["a"] and running_on(stack, "big") == ["b"],
                       what="small on a, big on b")
        if resized:  # what the kubelet writes once it has resized the container in place
            k8s.CoreV1Api(stack.api).patch_namespaced_pod_status("small-0", "default", {"status": {
                "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "image": "app",
                                       "imageID": "", "allocatedResources": {"cpu": "3", "memory": "1Gi"},
                                       "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]}})
        result = await stack.planner_pass()
        # nodeflow's gauge of the pass (Karpenter has none): the resized pod is counted at what the kubelet holds
        assert REGISTRY.get_sample_value("nodeflow_scheduling_pods_resizing") == (1.0 if resized else 0.0)
        if not resized:
            assert len(result.started) == 1  # a's 1 CPU fits beside b's 2: a goes
            return
        assert result.started == []
        told = [e["message"] for e in stack.events() if e["reason"] == "Unconsolidatable"
                and e["involvedObject"]["name"] == "a"]
        assert told, [(e["reason"], e["involvedObject"]["name"]) for e in stack.events()]
