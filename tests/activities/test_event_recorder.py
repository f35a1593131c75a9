"""activities/events.py Recorder: Karpenter's dedupe (pkg/events/recorder.go) against the emulated API server.

An Event is published once per (reason, object[, message]) within its reason's window, then again after it;
Nominated is rate-limited across pods (5/s, burst 10) as PodNominationRateLimiter is.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.events import EventActivities, Recorder, nominated_spec
from activities.fan_out import THREADS
from activities.kube import KubeActivities
from activities.provisioning_planner import explanation_specs
from api import events
from api.events import EventReason
from bench.clusters import node_objects
from contracts.disruption import EventsInput, EventSpec
from contracts.termination import VolumesInput
from gateways.kube import KubeClient
from planning.provisioning.provisioner import ProvisioningDecision
from simulator.server import Simulator


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def kube(sim: Simulator) -> KubeClient:
    return KubeClient(sim.api_client())


def _recorded(kube: KubeClient, namespace: str = "default") -> list[tuple[str, str, str, str]]:
    items = kube.core.list_namespaced_event(namespace).items
    return [(e.involved_object.kind, e.involved_object.name, e.reason, e.type) for e in items]


def test_an_event_is_dropped_within_its_window_and_published_after_it(kube: KubeClient) -> None:
    clock = Clock()
    rec = Recorder(kube, clock)
    first = EventSpec(kind="Node", name="n1", uid="u1", reason="Unconsolidatable", message="Can't replace with a "
                      "cheaper node")
    other = first.model_copy(update={"message": "SpotToSpotConsolidation is disabled, can't replace a spot node "
                                                "with a spot node"})
    assert rec.publish(first, first) == 1  # twice in one pass: once
    clock.now += 14 * 60
    assert rec.publish(other) == 0  # keyed by the Node alone (DedupeValues: UID), 15 min
    clock.now += 61
    assert rec.publish(other) == 1
    assert _recorded(kube).count(("Node", "n1", "Unconsolidatable", "Normal")) == 2


def test_windows_follow_the_reason_and_the_kind(kube: KubeClient) -> None:
    clock = Clock()
    rec = Recorder(kube, clock)
    pool = [EventSpec(kind="NodePool", name="default", reason="DisruptionBlocked",
                      message=events.budget_blocks_reason(r)) for r in ("Drifted", "Empty")]
    blocked = EventSpec(kind="Node", name="n1", reason="DisruptionBlocked", message="pdb default/web prevents it")
    assert rec.publish(*pool, blocked) == 3  # per disruption reason on the NodePool
    clock.now += 61
    assert rec.publish(*pool, blocked) == 2  # NodePool: 1 min; Node: 2 min
    clock.now += 60
    assert rec.publish(blocked) == 1


def test_karpenters_type_wins_for_karpenters_reasons(kube: KubeClient) -> None:
    rec = Recorder(kube, Clock())
    (ev,) = rec.fresh([EventSpec(kind="Node", name="n1", reason="FailedDraining", message="x")])
    assert ev.type == "Warning"
    (pool,) = rec.fresh([EventSpec(kind="NodePool", name="p", reason="NodePoolLimitsReached", type="Warning",
                                   message="y")])
    assert pool.type == "Warning"
    # the planner's NodeClassNotReady (emitted Normal) is Karpenter's Warning; an unlisted reason keeps its type
    (blocked,) = rec.fresh([EventSpec(kind="NodePool", name="p", reason="NodeClassNotReady", message="no launch")])
    (other,) = rec.fresh([EventSpec(kind="NodePool", name="p", reason="CostLimitReached", type="Warning", message="z")])
    assert (blocked.type, other.type) == ("Warning", "Warning")


def test_nominated_is_rate_limited_across_pods_and_lands_in_the_pods_namespace(kube: KubeClient) -> None:
    kube.core.create_namespace({"metadata": {"name": "shop"}})
    clock = Clock()
    rec = Recorder(kube, clock)
    pods = [nominated_spec(f"shop/web-{i}", node_claim="default-x") for i in range(15)]
    assert rec.publish(*pods) == 10  # burst 10
    clock.now += 1.0
    more = [nominated_spec(f"shop/api-{i}", node_claim="default-y") for i in range(15)]
    assert rec.publish(*more) == 5  # 5 per second
    recorded = _recorded(kube, "shop")
    assert len(recorded) == 15 and all(r[0] == "Pod" and r[2] == "Nominated" for r in recorded)


def test_the_planner_and_the_workflows_share_one_recorder_per_worker(kube: KubeClient) -> None:
    a, b = EventActivities(kube), EventActivities(kube)
    ev = EventSpec(kind="Node", name="n2", reason="Unconsolidatable", message="m")
    assert a.fresh([ev]) == [ev] and b.fresh([ev]) == []


def test_a_provisioning_decision_nominates_pods_and_names_pools_without_types() -> None:
    decision = ProvisioningDecision(nominated={"shop/a": "<launching:default-abc>"},
                                    scheduled={"shop/b": "ip-1"}, no_compatible_types=["gpu"])
    specs: list[Any] = explanation_specs(decision, {"ip-1": "default-old"})
    got = [(s.kind, s.namespace, s.name, s.reason, s.type, s.message) for s in specs]
    assert got == [
        ("NodePool", None, "gpu", "NoCompatibleInstanceTypes", "Warning", events.NO_COMPATIBLE_INSTANCE_TYPES),
        ("Pod", "shop", "a", "Nominated", "Normal", "Pod should schedule on: nodeclaim/default-abc"),
        ("Pod", "shop", "b", "Nominated", "Normal", "Pod should schedule on: nodeclaim/default-old, node/ip-1"),
    ]


async def test_a_volume_wait_says_awaiting_volume_detachment_once_per_window(sim: Simulator) -> None:
    """terminator/events.go NodeAwaitingVolumeDetachmentEvent: on the Node, the attachments' names, deduplicated
    by the Node over the activity's polls (docs/semantics.md §9.5)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0", "namespace": "default"},
           "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}, "status": {"phase": "Running"}}
    attachment = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "csi-1"},
                  "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv-1"}}}
    sim.load_objects([*node_objects("n1", "m5.large"), pod, attachment])
    kube = KubeClient(sim.api_client())
    acts = KubeActivities(kube, volume_poll=0.05)
    res = await ActivityEnvironment().run(acts.wait_volumes, VolumesInput(
        node_name="n1", node_claim_name="n1-claim", deadline=datetime.now(UTC) + timedelta(seconds=0.5)))
    assert not res.detached and res.pending == ["csi-1"]
    got = [(e.involved_object.kind, e.type, e.message) for e in kube.core.list_namespaced_event("default").items
           if e.reason == "AwaitingVolumeDetachment"]
    assert got == [("Node", "Normal", "Awaiting deletion of bound volumeattachments (csi-1)")]


async def test_a_batch_of_many_events_is_recorded_whole_over_several_requests_in_flight(kube: KubeClient) -> None:
    """A provisioning batch's Launched events, one per NodeClaim: more than fan_out.THREADS, each recorded once."""
    specs = [EventSpec(kind="NodeClaim", name=f"default-{i}", reason=EventReason.PROVISIONING_LAUNCHED,
                       message="launched for 1 pod") for i in range(5 * THREADS)]
    acts = EventActivities(kube, clock=Clock())
    assert await ActivityEnvironment().run(acts.record_events, EventsInput(events=specs)) == len(specs)
    got = sorted(r[1] for r in _recorded(kube) if r[0] == "NodeClaim")
    assert got == sorted(s.name for s in specs)
