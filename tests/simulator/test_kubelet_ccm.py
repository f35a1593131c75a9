"""The EC2 world's rounds without moto: instances as DescribeInstances shows them go through `Ec2World.apply`
against a bare World, so each step (boot, registration with the uninitialized taint, CCM initialization,
readiness, instance loss) is seen in order and deterministically."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from simulator.ec2 import Ec2World
from simulator.pods import meta, node_ready
from simulator.resources import BY_KIND
from simulator.server import EC2_POLL_PAUSE_CAP, ec2_poll_pause
from simulator.store import Store
from simulator.user_data import parse
from simulator.world import World

NODES, LEASES, NODECLAIMS = BY_KIND["Node"], BY_KIND["Lease"], BY_KIND["NodeClaim"]
URL = "http://127.0.0.1:6443"
NODEADM = f"""apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster: {{name: sim, apiServerEndpoint: "{URL}"}}
  kubelet:
    flags: ["--node-labels=team=ml", "--register-with-taints=dedicated=gpu:NoSchedule"]
"""


def _world() -> tuple[World, Ec2World]:
    world = World(Store(), time_scale=0.001, ready_delay=2.0)
    ec2 = Ec2World(world, "", client=object())
    ec2.identity.url = URL
    ec2.ccm.zone_ids = {"us-east-1b": "use1-az2"}
    return world, ec2


def _instance(iid: str, state: str = "running", itype: str = "m5.large", claim: str = "") -> dict[str, Any]:
    return {"InstanceId": iid, "InstanceType": itype, "State": {"Name": state},
            "Placement": {"AvailabilityZone": "us-east-1b"}, "PrivateDnsName": f"ip-{iid}.ec2.internal",
            "PrivateIpAddress": "10.0.0.7", "LaunchTime": datetime.now(UTC),
            "Tags": [{"Key": "karpenter.sh/nodeclaim", "Value": claim}] if claim else []}


def _rounds(world: World, ec2: Ec2World, instances: list[dict[str, Any]], n: int = 1) -> None:
    for _ in range(n):
        time.sleep(world.ready_delay * world.time_scale * 1.5)
        ec2.apply(instances)
        world.tick()


def test_boot_register_initialize_ready_in_order() -> None:
    world, ec2 = _world()
    inst = _instance("i-1")
    ec2._bootstraps["i-1"] = (True, parse(NODEADM))
    ec2.apply([inst])
    assert world.store.count(NODES) == 0, "the instance is still booting"
    _rounds(world, ec2, [inst])
    node = world.store.get(NODES, "", "ip-i-1.ec2.internal")
    assert node is not None and not node_ready(node)
    assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {
        ("dedicated", "NoSchedule"), ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule")}
    assert "node.kubernetes.io/instance-type" not in meta(node)["labels"], "the kubelet does not know it"
    assert world.store.get(LEASES, "kube-node-lease", "ip-i-1.ec2.internal") is not None
    _rounds(world, ec2, [inst])
    node = world.store.must_get(NODES, "", "ip-i-1.ec2.internal")
    assert [t["key"] for t in node["spec"]["taints"]] == ["dedicated"]
    labels = meta(node)["labels"]
    assert labels["node.kubernetes.io/instance-type"] == "m5.large" and labels["team"] == "ml"
    assert labels["topology.k8s.aws/zone-id"] == "use1-az2"
    assert node_ready(node)
    assert ec2.instance_counts() == {"running": 1}


def test_a_deleted_node_is_not_registered_again_while_its_instance_runs() -> None:
    world, ec2 = _world()
    inst = _instance("i-2")
    ec2._bootstraps["i-2"] = (True, parse(NODEADM))
    _rounds(world, ec2, [inst], 2)
    world.delete(NODES, "", "ip-i-2.ec2.internal")
    _rounds(world, ec2, [inst], 3)
    assert world.store.count(NODES) == 0


def test_instance_without_user_data_joins_only_by_an_unbound_claim_of_this_cluster() -> None:
    world, ec2 = _world()
    world.store.create(NODECLAIMS, {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                                    "metadata": {"name": "c1"}, "spec": {}})
    world.store.create(NODECLAIMS, {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                                    "metadata": {"name": "c2"}, "spec": {},
                                    "status": {"providerID": "aws:///us-east-1b/i-other"}})
    tagged, stranger, unknown = (_instance("i-3", claim="c1"),
                                 _instance("i-4", claim="c2"),
                                 _instance("i-5", claim="elsewhere"))
    for inst in (tagged, stranger, unknown):
        ec2._bootstraps[inst["InstanceId"]] = (False, None)
    _rounds(world, ec2, [tagged, stranger, unknown], 2)
    assert [meta(n)["name"] for n in world.store.list(NODES)] == ["ip-i-3.ec2.internal"]
    assert ec2.instance_counts() == {"running": 1}


def test_user_data_not_yet_read_and_old_instances_do_not_join() -> None:
    world, ec2 = _world()
    unread = _instance("i-6")
    old = _instance("i-7")
    old["LaunchTime"] = datetime(2020, 1, 1, tzinfo=UTC)
    ec2._bootstraps["i-7"] = (True, parse(NODEADM))
    _rounds(world, ec2, [unread, old], 2)
    assert world.store.count(NODES) == 0


def test_instance_gone_node_unknown_then_deleted_and_kubelet_stops() -> None:
    world, ec2 = _world()
    inst = _instance("i-8")
    ec2._bootstraps["i-8"] = (True, parse(NODEADM))
    _rounds(world, ec2, [inst], 2)
    name = "ip-i-8.ec2.internal"
    world.store.replace(NODES, {**world.store.must_get(NODES, "", name),
                                "metadata": {**world.store.must_get(NODES, "", name)["metadata"],
                                             "finalizers": ["karpenter.sh/termination"]}})
    gone = {**inst, "State": {"Name": "shutting-down"}}
    ec2.apply([gone])
    node = world.store.must_get(NODES, "", name)
    assert not node_ready(node)
    _rounds(world, ec2, [gone], 2)
    assert meta(world.store.must_get(NODES, "", name)).get("deletionTimestamp"), "deleted, held by its finalizer"
    assert ec2.instance_counts() == {"shutting-down": 1}


def test_boot_counts_from_the_launch_not_from_the_poll_that_first_saw_it() -> None:
    """A poll that reads hundreds of new instances is slow; an instance it first sees after its boot time has
    booted already, as a real kubelet does without anyone looking. Never before the launch: moto's LaunchTime is
    truncated to the second."""
    world = World(Store(), time_scale=1.0, ready_delay=5.0)
    ec2 = Ec2World(world, "", client=object())
    ec2.identity.url = URL
    ec2.started_at = datetime.now(UTC) - timedelta(minutes=1)  # the world ran before the instances launched
    late, fresh = _instance("i-late"), _instance("i-fresh")
    late["LaunchTime"] = datetime.now(UTC) - timedelta(seconds=30)
    fresh["LaunchTime"] = datetime.now(UTC).replace(microsecond=0)  # up to a second older than it is
    for inst in (late, fresh):
        ec2._bootstraps[inst["InstanceId"]] = (True, parse(NODEADM))
    ec2.apply([late, fresh])
    assert world.store.get(NODES, "", "ip-i-late.ec2.internal") is not None
    assert world.store.get(NODES, "", "ip-i-fresh.ec2.internal") is None, "still booting"


def test_a_long_poll_pauses_the_next_at_most_a_few_seconds() -> None:
    assert ec2_poll_pause(1.0, 0.2) == 1.0
    assert ec2_poll_pause(0.25, 0.5) == 1.5  # the steady listing: a quarter of the time
    assert ec2_poll_pause(1.0, 60.0) == EC2_POLL_PAUSE_CAP  # new instances read once
