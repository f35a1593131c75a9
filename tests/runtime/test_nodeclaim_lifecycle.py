"""The lifecycle controller against the simulator (no EC2): two replicas racing make one result, steps stop
once done, a resync costs no writes, and a pod event moves lastPodEventTime."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from kubernetes import client as k8s
from support.sim_objects import node, pod

from api import labels as L
from api.catalog import load_default_catalog
from gateways.kube import KubeClient
from runtime.cluster_cache import ClusterCache
from runtime.nodeclaim_lifecycle import KINDS, NodeClaimLifecycle

PID = "aws:///us-east-1a/i-0123456789abcdef0"


def _claim(name: str = "c1") -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {L.NODEPOOL_LABEL: "default", "team": "a"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": [{"key": L.ZONE_LABEL, "operator": "In", "values": ["us-east-1a"]}]}}


def _pool() -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
            "spec": {"disruption": {"consolidateAfter": "0s"}, "template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": []}}}}


def _setup(api: Any) -> None:
    custom = k8s.CustomObjectsApi(api)
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", _pool())
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", _claim())
    custom.patch_cluster_custom_object_status("karpenter.sh", "v1", "nodeclaims", "c1", {"status": {
        "providerID": PID, "conditions": [{"type": "Launched", "status": "True", "reason": "Launched",
                                           "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    n = node("n1", taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])
    n["spec"]["providerID"] = PID
    k8s.CoreV1Api(api).create_node(n)


def _controller(api: Any) -> tuple[NodeClaimLifecycle, ClusterCache]:
    cache = ClusterCache(api, kinds=KINDS)
    cache.start()
    assert cache.wait_synced(10)
    catalog = load_default_catalog()
    return NodeClaimLifecycle(KubeClient(api), cache, ec2=None, catalog=lambda: catalog), cache


async def _settle(controllers: list[NodeClaimLifecycle], rounds: int = 6) -> None:
    for _ in range(rounds):
        await asyncio.gather(*(c.reconcile(full=True) for c in controllers))
        await asyncio.sleep(0.1)  # let the caches see the writes


async def test_two_replicas_register_and_initialize_once(sim: Any) -> None:
    api = sim.api_client()
    _setup(api)
    (a, ca), (b, cb) = _controller(api), _controller(api)
    try:
        await _settle([a, b])
        n = api.sanitize_for_serialization(k8s.CoreV1Api(api).read_node("n1"))
        claim = k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
        assert n["metadata"]["finalizers"] == [L.TERMINATION_FINALIZER]
        assert [o["name"] for o in n["metadata"]["ownerReferences"]] == ["c1"]
        assert n["metadata"]["labels"]["team"] == "a" and n["metadata"]["labels"][L.ZONE_LABEL] == "us-east-1a"
        assert n["metadata"]["labels"][L.REGISTERED_LABEL] == n["metadata"]["labels"][L.INITIALIZED_LABEL] == "true"
        assert not n["spec"].get("taints")
        types = Counter(c["type"] for c in claim["status"]["conditions"])
        assert max(types.values()) == 1, types  # no condition written twice by the two replicas
        statuses = {c["type"]: c["status"] for c in claim["status"]["conditions"]}
        assert statuses.items() >= {"Launched": "True", "Registered": "True", "Initialized": "True",
                                    "Consolidatable": "True", "Ready": "True"}.items()
        assert claim["status"]["nodeName"] == "n1"
        assert L.TERMINATION_FINALIZER in claim["metadata"]["finalizers"]
        # settled: a further resync writes nothing
        rv = claim["metadata"]["resourceVersion"]
        node_rv = n["metadata"]["resourceVersion"]
        await _settle([a, b], rounds=2)
        again = k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
        assert again["metadata"]["resourceVersion"] == rv
        assert k8s.CoreV1Api(api).read_node("n1").metadata.resource_version == node_rv
    finally:
        ca.stop()
        cb.stop()
        api.close()


async def test_a_pod_bound_to_the_node_moves_last_pod_event_time(sim: Any) -> None:
    api = sim.api_client()
    _setup(api)
    ctl, cache = _controller(api)
    try:
        ctl.attach()
        await _settle([ctl], rounds=3)
        before = k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
        assert "lastPodEventTime" not in before["status"]
        k8s.CoreV1Api(api).create_namespaced_pod("default", pod("p1", node_name="n1"))
        await asyncio.sleep(0.3)
        await _settle([ctl], rounds=2)
        after = k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
        assert after["status"].get("lastPodEventTime")
    finally:
        ctl.detach()
        cache.stop()
        api.close()


def _adopted(api: Any, name: str, initialized: bool) -> None:
    """A claim written with its dependents already set and no root Ready (as a migration or the demo writes it)."""
    pid = f"aws:///us-east-1a/i-{name}"
    k8s.CustomObjectsApi(api).create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", _claim(name))
    conds = [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
             for t in ("Launched", "Registered", *(("Initialized",) if initialized else ()))]
    k8s.CustomObjectsApi(api).patch_cluster_custom_object_status("karpenter.sh", "v1", "nodeclaims", name, {
        "status": {"providerID": pid, "nodeName": f"n-{name}", "conditions": conds}})
    n = node(f"n-{name}", ready=initialized, labels={L.REGISTERED_LABEL: "true", L.NODEPOOL_LABEL: "default"})
    n["spec"]["providerID"] = pid
    k8s.CoreV1Api(api).create_node(n)


async def test_adopted_claims_get_karpenters_root_ready_condition(sim: Any) -> None:
    """25 of 27 demo claims showed an empty READY column: claims whose Launched, Registered and Initialized
    were already written never had Ready computed (only the Initialized transition wrote it)."""
    api = sim.api_client()
    custom = k8s.CustomObjectsApi(api)
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", _pool())
    _adopted(api, "ready", initialized=True)
    _adopted(api, "booting", initialized=False)  # its Node is NotReady: Initialized stays Unknown
    ctl, cache = _controller(api)
    try:
        await _settle([ctl], rounds=3)
        claims = {name: custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
                  for name in ("ready", "booting")}
        ready = {name: next((c for c in claim["status"]["conditions"] if c["type"] == "Ready"), None)
                 for name, claim in claims.items()}
        assert ready["ready"] is not None and (ready["ready"]["status"], ready["ready"]["reason"]) == ("True", "Ready")
        assert ready["booting"] is not None
        assert (ready["booting"]["status"], ready["booting"]["reason"], ready["booting"]["message"]) == (
            "Unknown", "ReconcilingDependents", "Initialized=Unknown")
        rv = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "ready")["metadata"][
            "resourceVersion"]
        await _settle([ctl], rounds=2)  # settled: Ready holds, nothing more is written
        assert custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "ready")["metadata"][
            "resourceVersion"] == rv
    finally:
        cache.stop()
        api.close()


class _Ec2:
    """DescribeInstances of one instance tagged for claim `lost` (a launch whose activity died before its record)."""

    def describe_instances(self, **_: Any) -> dict[str, Any]:
        return {"Reservations": [{"Instances": [{
            "InstanceId": "i-0lost", "InstanceType": "m5.large", "Placement": {"AvailabilityZone": "us-east-1a"},
            "Tags": [{"Key": "karpenter.sh/nodeclaim", "Value": "lost"}]}]}]}


async def test_a_launch_recorded_from_the_instance_honours_the_claims_node_class(sim: Any) -> None:
    """The lifecycle's launch record (a launch activity that died first) reads the claim's EC2NodeClass:
    the class's 80Gi root volume and maxPods, memory less the VM overhead."""
    from runtime.nodeclaim_lifecycle import LifecycleSettings

    api = sim.api_client()
    custom = k8s.CustomObjectsApi(api)
    custom.create_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", {
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
        "spec": {"role": "NodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                 "subnetSelectorTerms": [{"tags": {"k": "v"}}], "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
                 "kubelet": {"maxPods": 50},
                 "blockDeviceMappings": [{"deviceName": "/dev/xvda", "rootVolume": True,
                                          "ebs": {"volumeSize": "80Gi"}}]}})
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", _pool())
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", _claim("lost"))
    cache = ClusterCache(api, kinds=KINDS)
    cache.start()
    assert cache.wait_synced(10)
    catalog = load_default_catalog()
    ctl = NodeClaimLifecycle(KubeClient(api), cache, ec2=_Ec2(), catalog=lambda: catalog,
                             settings=LifecycleSettings(launch_lookup_after_seconds=0))
    try:
        await _settle([ctl], rounds=2)
        status = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "lost")["status"]
        assert status["providerID"] == "aws:///us-east-1a/i-0lost"
        assert status["capacity"] == {"cpu": "2", "memory": "7577Mi", "ephemeral-storage": "80Gi", "pods": "50"}
    finally:
        cache.stop()
        api.close()


async def test_every_demo_claim_shows_ready_after_one_pass() -> None:
    """#33 as the issue saw it: the demo's claims (written with Launched, Registered, Initialized) all carry
    Ready=True after one lifecycle pass (before: 0 of 30 in this scenario)."""
    from devstack.demo_scenario import demo_cluster
    from simulator.server import Simulator

    with Simulator(time_scale=0.01, objects=demo_cluster()) as sim:
        api = sim.api_client()
        ctl, cache = _controller(api)
        try:
            await _settle([ctl], rounds=1)
            items = k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
            ready = [next((c["status"] for c in i["status"]["conditions"] if c["type"] == "Ready"), None)
                     for i in items]
            assert len(items) == 30 and ready == ["True"] * 30
        finally:
            cache.stop()
            api.close()


def test_a_claim_that_says_launched_already_carries_its_instances_labels(sim: Any) -> None:
    """The launch record writes the labels before the status, as Karpenter: no version of the claim has a
    providerID without its instance type, which a NodePool requiring `node.kubernetes.io/instance-type` read as
    RequirementsDrifted (a fresh node replaced in bench/scale_out_ice.py's run, docs/benchmarks.md)."""
    from kubernetes import watch

    api = sim.api_client()
    custom = k8s.CustomObjectsApi(api)
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", _pool())
    rv = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", _claim("fresh"))["metadata"][
        "resourceVersion"]
    ctl, cache = _controller(api)
    try:
        ctl.record_launch("fresh", _Ec2().describe_instances()["Reservations"][0]["Instances"][0])
        versions = []
        for ev in watch.Watch().stream(custom.list_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims",
                                       resource_version=rv, timeout_seconds=2):
            versions.append(ev["object"])
            if (ev["object"].get("status") or {}).get("providerID"):
                break
        launched = [v for v in versions if (v.get("status") or {}).get("providerID")]
        assert launched, "the launch was recorded"
        assert launched[0]["metadata"]["labels"][L.INSTANCE_TYPE_LABEL] == "m5.large"
        assert launched[0]["metadata"]["labels"][L.ZONE_LABEL] == "us-east-1a"
    finally:
        cache.stop()
        api.close()
