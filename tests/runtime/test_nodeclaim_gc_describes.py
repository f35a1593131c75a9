"""Garbage collection asks EC2 only about the NodeClaims the listing leaves in doubt: registered, not deleting, their
Node not Ready. A Ready node's claim is never collected, so describing its instance every pass (200 at a time, ~0.4 s
of the worker's CPU each, every 10 s) bought nothing."""

from __future__ import annotations

from typing import Any

from bench.termination_cluster import cluster_objects
from gateways.ec2 import Ec2Gateway, Instance
from gateways.kube import KubeClient
from runtime.cloud_clients import ec2_client
from runtime.cluster_cache import ClusterCache
from runtime.informer import CacheSettings
from runtime.nodeclaim_gc import GarbageCollector, GcSettings


class _Asked(Ec2Gateway):
    """The real gateway over moto, remembering which instance ids it was asked about."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.asked: list[str] = []

    def instances(self, *, ids: Any = None, filters: Any = None) -> list[Instance]:
        self.asked += list(ids or [])
        return super().instances(ids=ids, filters=filters)


def _ready(objs: list[dict[str, Any]], node: str, status: str) -> None:
    for o in objs:
        if o["kind"] == "Node" and o["metadata"]["name"] == node:
            o["status"]["conditions"] = [{"type": "Ready", "status": status}]


def test_only_claims_in_doubt_are_described_and_the_one_whose_instance_is_gone_is_collected(
        sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client("us-east-1", moto_endpoint)
    image = ec2.describe_images()["Images"][0]["ImageId"]
    ids = [i["InstanceId"] for i in ec2.run_instances(ImageId=image, InstanceType="m5.large", MinCount=3,
                                                       MaxCount=3)["Instances"]]
    ec2.terminate_instances(InstanceIds=[ids[1]])
    objs = cluster_objects({"ready": ids[0], "gone": ids[1], "notready": ids[2]}, [], registered=True)
    _ready(objs, "ready", "True")
    _ready(objs, "gone", "False")
    _ready(objs, "notready", "Unknown")
    sim.load_objects(objs)
    api = sim.api_client()
    cloud = _Asked(ec2)
    with ClusterCache(api, CacheSettings(backoff_base_seconds=0.05), kinds=("Node", "NodeClaim")) as cache:
        assert cache.wait_synced(10)
        gc = GarbageCollector(KubeClient(api), cache, cloud, None, GcSettings(instance_grace_seconds=0))
        result = gc.collect()
    assert sorted(cloud.asked) == sorted([ids[1], ids[2]])  # never the Ready node's instance
    assert result.claims_deleted == ["gone-claim"]  # its instance is gone and its Node is not Ready
    names = {c["metadata"]["name"] for c in KubeClient(api).list_karpenter("nodeclaims")
             if not c["metadata"].get("deletionTimestamp")}
    assert names == {"ready-claim", "notready-claim"}
    ec2.terminate_instances(InstanceIds=[ids[0], ids[2]])
    api.close()
