"""Garbage collection terminates an instance only on the API server's word: an instance whose NodeClaim the watch
cache does not show yet (a cache behind a loaded API server) is kept when the API server shows the claim, and one
whose claim the API server does not know either is terminated."""

from __future__ import annotations

from typing import Any

from api import labels as L
from api.nodeclass_launch import EKS_CLUSTER_TAG
from bench.clusters import node_objects
from gateways.kube import KubeClient
from runtime.cloud_clients import ec2_client
from runtime.nodeclaim_gc import GarbageCollector, GcSettings


class _Informer:
    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.objs = objs

    def objects(self) -> list[dict[str, Any]]:
        return list(self.objs)


class _LaggingCache:
    """A watch cache that has seen no NodeClaim and no Node yet."""

    informers = {"NodeClaim": _Informer([]), "Node": _Informer([])}


def _launch(ec2: Any, image: str, claim: str, uid: str) -> str:
    tags = {EKS_CLUSTER_TAG: "c1", L.NODEPOOL_LABEL: "default", L.NODECLAIM_TAG: claim, L.NODECLAIM_UID_TAG: uid}
    out = ec2.run_instances(ImageId=image, InstanceType="m5.large", MinCount=1, MaxCount=1, TagSpecifications=[
        {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}])
    return str(out["Instances"][0]["InstanceId"])


def test_an_instance_whose_claim_only_the_api_server_shows_is_kept_and_a_true_orphan_is_terminated(
        sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client("us-east-1", moto_endpoint)
    image = ec2.describe_images()["Images"][0]["ImageId"]
    claim = node_objects("n1", "m5.large")[0]
    del claim["status"]  # launched, its record not written yet: only the tag names its instance
    sim.load_objects([claim])
    kept = _launch(ec2, image, "n1-claim", claim["metadata"]["uid"])
    orphan = _launch(ec2, image, "gone-claim", "uid-gone")
    stale_uid = _launch(ec2, image, "n1-claim", "uid-of-an-earlier-n1-claim")  # the name reused: not its claim
    gc = GarbageCollector(KubeClient(sim.api_client()), _LaggingCache(), ec2, "c1",  # type: ignore[arg-type]
                          GcSettings(instance_grace_seconds=0))
    result = gc.collect()
    assert sorted(result.instances_terminated) == sorted([orphan, stale_uid]) and result.instances_kept == [kept]
    states = {i["InstanceId"]: i["State"]["Name"] for r in ec2.describe_instances(
        InstanceIds=[kept, orphan, stale_uid])["Reservations"] for i in r["Instances"]}
    assert states[kept] == "running" and {states[orphan], states[stale_uid]} <= {"shutting-down", "terminated"}
    ec2.terminate_instances(InstanceIds=[kept])
