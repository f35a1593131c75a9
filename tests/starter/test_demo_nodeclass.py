"""The demo's EC2NodeClasses: the scenario's pools and memory nodes point at them, and against moto the demo's AWS
side (devstack/demo_aws.py) makes them Ready on BASE_IMAGE; a newer image for `memory` is what the next
resolution picks, and the memory nodes (which run BASE_IMAGE) are then AMI-drifted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from activities.nodeclass import NodeClassActivities
from api import labels as L
from contracts.nodeclass import NodeClassInput
from devstack.demo_aws import BASE_IMAGE, CLUSTER_NAME, DemoAws
from devstack.demo_scenario import demo_cluster
from gateways.kube import KubeClient
from starter.demo_nodeclass import AmiRollout


def test_the_scenario_with_node_classes() -> None:
    objs = demo_cluster(node_classes=True)
    assert sorted(o["metadata"]["name"] for o in objs if o["kind"] == "EC2NodeClass") == ["default", "memory"]
    refs = {o["metadata"]["name"]: o["spec"]["template"]["spec"]["nodeClassRef"]["name"]
            for o in objs if o["kind"] == "NodePool"}
    assert refs == {"general": "default", "memory": "memory", "batch": "default", "spot": "default",
                    "ci": "default"}
    memory = [o for o in objs if o["kind"] == "NodeClaim" and o["metadata"]["name"].startswith("memory-")]
    assert len(memory) == 3 and {c["status"]["imageID"] for c in memory} == {BASE_IMAGE}
    pinned = sorted(o["metadata"]["labels"]["app"] for o in objs if o["kind"] == "Pod"
                    and (o["spec"].get("nodeSelector") or {}).get(L.NODEPOOL_LABEL) == "memory")
    assert pinned == ["cache", "sessions", "sessions"]
    assert not any(o["kind"] == "EC2NodeClass" for o in demo_cluster())  # the dry-run scenario has none


@pytest.fixture
def kube(k8s: Any) -> Iterator[KubeClient]:
    yield KubeClient(k8s)


def test_the_demo_classes_resolve_and_a_newer_image_drifts_the_memory_nodes(kube: KubeClient, sim: Any,
                                                                            moto_endpoint: str) -> None:
    kw = {"region_name": "us-east-1", "endpoint_url": moto_endpoint}
    aws = DemoAws(boto3.client("ec2", **kw), boto3.client("iam", **kw)).create()
    objs = demo_cluster(node_classes=True)
    sim.load_objects([o for o in objs if o["kind"] in ("EC2NodeClass", "NodePool", "NodeClaim")])
    acts = NodeClassActivities(kube, aws.ec2, boto3.client("ssm", **kw), aws.iam, cluster_name=CLUSTER_NAME)
    first = acts.reconcile_all(NodeClassInput())
    assert {c.name: (c.ready, c.subnets, c.security_groups) for c in first.classes} == {
        "default": (True, 3, 1), "memory": (True, 3, 1)}, first
    assert first.drifted == {}
    image = aws.register_newer_image("memory", "nodeflow-demo-memory-2")
    second = acts.reconcile_all(NodeClassInput())
    assert second.drifted == {"AMIDrift": 3}
    memory = kube.get_node_class("memory") or {}
    assert memory["status"]["amis"][0]["id"] == image
    assert (kube.get_node_class("default") or {})["status"]["amis"][0]["id"] == BASE_IMAGE


def test_the_rollout_note_and_report() -> None:
    rollout = AmiRollout(image="ami-new", resolved_after=2.04, first_drift_after=15.0, on_image=1, in_pool=3)
    assert rollout.note() == ("new AMI ami-new for EC2NodeClass memory: resolved +2s, first drift +15s; "
                              "1/3 memory nodes on it")
    assert rollout.report()["resolvedAfterSeconds"] == 2.0 and rollout.report()["rolledOutAfterSeconds"] is None
