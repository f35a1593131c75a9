"""The NodeClaim lifecycle end to end, with nodeflow alone doing Karpenter's part.

The simulator plays only kubelets and the cloud controller manager: it registers a Node from the instance's
bootstrap and turns it Ready. Everything else is the worker's: the launch record, registration (finalizer,
owner reference, labels, `karpenter.sh/registered`), initialization (`karpenter.sh/initialized`), liveness and
garbage collection.

- a pending pod's node is launched, registered and initialized by the worker;
- with no worker running, the launched node registers with the API server but never becomes initialized;
- an instance of the cluster that no NodeClaim accounts for is terminated; a claim whose instance is gone is
  deleted; a claim whose Node never registers is deleted at the registration timeout.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from e2e.termination_helpers import QUICK_DRAIN
from kubernetes import client as k8s
from support.cli_runner import nodeflow
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from bench.clusters import node_pool
from contracts.disruption import LaunchInput, Replacement
from contracts.provisioning import PodRef, ProvisioningInput, ProvisioningPhase, ProvisioningSettings
from gateways.kube import KubeClient
from runtime.cloud_clients import ec2_client
from runtime.nodeclaim_gc import GcSettings
from runtime.nodeclaim_lifecycle import LifecycleSettings
from workflows.provisioning import ProvisioningWorkflow

pytestmark = [pytest.mark.e2e]  # no shared fixture: any xdist worker (the "demo" group is for test_demo.py)
FAST = ProvisioningSettings(ready_timeout_seconds=30, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=2)
QUICK = {"min_drain_seconds": QUICK_DRAIN}  # the tests that end a termination are not about MinDrainTime's 5 s
ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def claims(api: Any) -> list[dict[str, Any]]:
    return k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]


def node(api: Any, name: str) -> dict[str, Any] | None:
    try:
        return api.sanitize_for_serialization(k8s.CoreV1Api(api).read_node(name))
    except k8s.ApiException:
        return None


def condition(obj: dict[str, Any], ctype: str) -> str:
    return next((c.get("status", "") for c in (obj.get("status") or {}).get("conditions") or []
                 if c.get("type") == ctype), "")


def pending_refs(api: Any) -> list[PodRef]:
    items = api.sanitize_for_serialization(k8s.CoreV1Api(api).list_namespaced_pod("default").items)
    return [PodRef(key=f"default/{p['metadata']['name']}", uid=p["metadata"]["uid"]) for p in items
            if any(c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get("conditions") or [])]


def initialized_claim(api: Any) -> dict[str, Any] | None:
    return next((c for c in claims(api) if condition(c, "Initialized") == "True"), None)


async def test_a_launched_node_is_registered_and_initialized_by_nodeflow(temporal_client, sim_ec2,
                                                                         moto_endpoint) -> None:
    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND, consolidate_after="Never"),
                                replica_set("web", 2, "500m")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        refs = await wait_for(lambda: (r := pending_refs(stack.api)) and len(r) == 2 and r, what="2 pending")
        handle = await stack.client.start_workflow(
            ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=FAST),
            id=f"provision-test-{uuid.uuid4()}", task_queue=stack.task_queue)
        result = await asyncio.wait_for(handle.result(), 90)
        assert result.outcome == ProvisioningPhase.SUCCEEDED, result.message
        claim = await wait_for(lambda: initialized_claim(stack.api), timeout=30, what="an initialized NodeClaim")
        status = claim["status"]
        assert status["providerID"].startswith("aws:///") and status["nodeName"]
        assert {condition(claim, t) for t in ("Launched", "Registered", "Initialized")} == {"True"}
        assert claim["metadata"]["labels"][labels.INSTANCE_TYPE_LABEL] in {r.instance_type for r in result.launched}
        n = node(stack.api, status["nodeName"])
        assert n is not None
        meta = n["metadata"]
        assert labels.TERMINATION_FINALIZER in meta["finalizers"]
        assert [o["kind"] for o in meta["ownerReferences"]] == ["NodeClaim"]
        assert meta["ownerReferences"][0]["uid"] == claim["metadata"]["uid"]
        assert meta["labels"][labels.REGISTERED_LABEL] == "true"
        assert meta["labels"][labels.INITIALIZED_LABEL] == "true"
        assert meta["labels"][labels.NODEPOOL_LABEL] == "default"
        assert not [t for t in (n["spec"].get("taints") or []) if t["key"] == "karpenter.sh/unregistered"]


def _launch_without_worker(sim: Any, moto_endpoint: str, pool: str) -> str:
    """Launch one node through nodeflow's launch activity code (no worker, no Temporal): its NodeClaim's name."""
    api = sim.api_client()
    acts = ProvisioningActivities(KubeClient(api), ec2_client("us-east-1", moto_endpoint), load_default_catalog(),
                                  ami_id=sim.world.ec2.image_id())
    launched = acts._launch(LaunchInput(node_pool=pool, key=f"test-{uuid.uuid4()}", replacement=Replacement(
        instance_types=["m5.large"], capacity_type="on-demand", price=0.096), reason="Provisioning"))
    return launched.node_claim


async def test_without_the_worker_a_launched_node_never_becomes_initialized(temporal_client, sim_ec2,
                                                                           moto_endpoint) -> None:
    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND, consolidate_after="Never")]))
    api = sim_ec2.api_client()
    name = await asyncio.to_thread(_launch_without_worker, sim_ec2, moto_endpoint, "default")
    core = k8s.CoreV1Api(api)

    def ready_nodes() -> list[dict[str, Any]]:
        items = api.sanitize_for_serialization(core.list_node().items)
        return [n for n in items if any(c["type"] == "Ready" and c["status"] == "True"
                                        for c in n["status"].get("conditions") or [])]

    nodes = await wait_for(ready_nodes, timeout=30, what="the kubelet's Node Ready")
    await asyncio.sleep(2)  # time a controller would have had
    n = api.sanitize_for_serialization(core.read_node(nodes[0]["metadata"]["name"]))
    claim = next(c for c in claims(api) if c["metadata"]["name"] == name)
    assert labels.INITIALIZED_LABEL not in n["metadata"]["labels"]
    assert labels.REGISTERED_LABEL not in n["metadata"]["labels"]
    assert not n["metadata"].get("ownerReferences") and not n["metadata"].get("finalizers")
    assert condition(claim, "Registered") != "True" and condition(claim, "Initialized") != "True"
    # ... and once a worker runs, nodeflow registers and initializes it
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint):
        done = await wait_for(lambda: initialized_claim(api), timeout=30, what="initialized once the worker runs")
        assert done["metadata"]["name"] == name
    api.close()


async def test_garbage_collection_and_liveness(temporal_client, sim_ec2, moto_endpoint) -> None:
    cluster = f"gc-{uuid.uuid4().hex[:8]}"
    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND, consolidate_after="Never")]))
    ec2 = ec2_client("us-east-1", moto_endpoint)
    stray = ec2.run_instances(ImageId=sim_ec2.world.ec2.image_id(), InstanceType="m5.large", MinCount=1, MaxCount=1,
                              TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                  {"Key": "eks:eks-cluster-name", "Value": cluster},
                                  {"Key": labels.NODEPOOL_LABEL, "Value": "default"}]}])["Instances"][0]["InstanceId"]
    other = ec2.run_instances(ImageId=sim_ec2.world.ec2.image_id(), InstanceType="m5.large", MinCount=1, MaxCount=1,
                              TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                  {"Key": "eks:eks-cluster-name", "Value": f"other-{cluster}"},
                                  {"Key": labels.NODEPOOL_LABEL, "Value": "default"}]}])["Instances"][0]["InstanceId"]
    never = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
             "metadata": {"name": "never-registers", "labels": {labels.NODEPOOL_LABEL: "default"}},
             "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                      "requirements": []}}
    worker = {"cluster_name": cluster, "watch": True,
              "gc_settings": GcSettings(fast_seconds=0.5, instance_grace_seconds=0),
              "lifecycle_settings": LifecycleSettings(resync_seconds=0.5, launch_ttl_seconds=3)}
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=worker) as stack:
        name = await asyncio.to_thread(_launch_without_worker, sim_ec2, moto_endpoint, "default")
        claim = await wait_for(lambda: next((c for c in claims(stack.api) if c["metadata"]["name"] == name
                                             and condition(c, "Initialized") == "True"), None),
                               timeout=30, what="the launched claim initialized")
        k8s.CustomObjectsApi(stack.api).create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", never)

        def state(iid: str) -> str:
            resp = ec2.describe_instances(InstanceIds=[iid])
            return resp["Reservations"][0]["Instances"][0]["State"]["Name"]

        await wait_for(lambda: state(stray) in ("shutting-down", "terminated"), timeout=20,
                       what="the stray instance terminated")
        assert state(other) == "running"  # another cluster's instance is never touched
        # the claim's instance goes behind nodeflow's back: the claim is collected
        iid = claim["status"]["providerID"].rsplit("/", 1)[-1]
        ec2.terminate_instances(InstanceIds=[iid])
        await wait_for(lambda: all(c["metadata"]["name"] != name for c in claims(stack.api)), timeout=45,
                       what="the claim of a gone instance deleted")
        await wait_for(lambda: all(c["metadata"]["name"] != "never-registers" for c in claims(stack.api)),
                       timeout=30, what="the claim that never launched deleted at its launch timeout")
    ec2.terminate_instances(InstanceIds=[other])


async def _provisioned(stack: Any, count: int) -> dict[str, Any]:
    """Provision the pending pods through the ProvisioningWorkflow; the initialized claim of their node."""
    refs = await wait_for(lambda: (r := pending_refs(stack.api)) and len(r) == count and r, what=f"{count} pending")
    handle = await stack.client.start_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=FAST),
        id=f"provision-test-{uuid.uuid4()}", task_queue=stack.task_queue)
    result = await asyncio.wait_for(handle.result(), 90)
    assert result.outcome == ProvisioningPhase.SUCCEEDED, result.message
    return await wait_for(lambda: initialized_claim(stack.api), timeout=30, what="an initialized NodeClaim")


async def test_a_launched_node_that_empties_is_consolidated(temporal_client, sim_ec2, moto_endpoint) -> None:
    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND, consolidate_after="0s"),
                                replica_set("web", 1, "500m")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK) as stack:
        claim = await _provisioned(stack, 1)
        node_name = claim["status"]["nodeName"]
        k8s.AppsV1Api(stack.api).patch_namespaced_replica_set("web", "default", {"spec": {"replicas": 0}})
        await wait_for(lambda: condition(next((c for c in claims(stack.api) if c["metadata"]["name"]
                                                == claim["metadata"]["name"]), {}), "Consolidatable") == "True",
                       timeout=20, what="the claim Consolidatable")
        result = await stack.planner_pass()
        assert result.started, "the empty node nodeflow launched was not consolidated"
        await wait_for(lambda: node(stack.api, node_name) is None, timeout=60, what="the empty node gone")
        await wait_for(lambda: not claims(stack.api), timeout=30, what="its NodeClaim gone")


async def test_kubectl_delete_node_drains_with_its_deadline(temporal_client, sim_ec2, moto_endpoint) -> None:
    pool = node_pool("default", requirements=ON_DEMAND, consolidate_after="Never")
    pool["spec"]["template"]["spec"]["terminationGracePeriod"] = "1h"
    blocking = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web",
                "namespace": "default"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    sim_ec2.load_objects(fresh([pool, replica_set("web", 1, "500m"), blocking]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker={**QUICK, "watch": True}) as stack:
        claim = await _provisioned(stack, 1)
        node_name = claim["status"]["nodeName"]
        uid = node(stack.api, node_name)["metadata"]["uid"]
        await wait_for(lambda: (r := k8s.CoreV1Api(stack.api).list_namespaced_pod(
            "default", label_selector="app=web").items) and r[0].status.phase == "Running", what="web running")
        k8s.CoreV1Api(stack.api).delete_node(node_name)
        handle = stack.client.get_workflow_handle(f"terminate-{uid}")

        async def progress() -> Any:
            try:
                return await handle.query("progress")
            except Exception:
                return None

        prog = None
        for _ in range(100):
            prog = await progress()
            if prog is not None and prog.get("deadline"):
                break
            await asyncio.sleep(0.2)
        assert prog is not None and prog.get("deadline"), f"no deadline for a node of a pool with one: {prog}"
        assert node(stack.api, node_name) is not None  # the PDB holds the drain
        # forced: the instance, the Node and the NodeClaim all go (the claim once stayed and blocked the pool)
        code, _, err = await nodeflow(stack.client, "force", node_name, "--reason", "test")
        assert code == 0, err
        await asyncio.wait_for(handle.result(), 60)
        iid = claim["status"]["providerID"].rsplit("/", 1)[-1]
        state = stack.ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]
        assert state in ("shutting-down", "terminated")
        await wait_for(lambda: node(stack.api, node_name) is None, timeout=30, what="the Node gone")
        await wait_for(lambda: all(c["metadata"]["name"] != claim["metadata"]["name"] for c in claims(stack.api)),
                       timeout=30, what="the NodeClaim gone")
