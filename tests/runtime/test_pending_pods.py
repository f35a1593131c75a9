"""runtime/pending_pods.py: which pods are batched, and when a batch window closes (Karpenter's 1 s idle / 10 s max)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from contracts.provisioning import PodRef, batch_workflow_id
from runtime.pending_pods import Batcher, PendingPodIntake, unschedulable


def _pod(name: str, reason: str | None = "Unschedulable", **spec: Any) -> dict[str, Any]:
    conds = [{"type": "PodScheduled", "status": "False", "reason": reason}] if reason else []
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec,
            "status": {"phase": "Pending", "conditions": conds}}


def test_only_unschedulable_pods_a_node_can_help_are_batched() -> None:
    assert unschedulable(_pod("a")) == PodRef(key="ns/a", uid="uid-a")
    assert unschedulable(_pod("b", reason=None)) is None  # the scheduler has not tried it yet
    assert unschedulable(_pod("c", nodeName="n1")) is None
    ds = _pod("d")
    ds["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds"}]
    assert unschedulable(ds) is None
    gone = _pod("e")
    gone["metadata"]["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    assert unschedulable(gone) is None


def test_window_closes_one_idle_second_after_the_last_new_pod() -> None:
    b = Batcher(idle_seconds=1.0, max_seconds=10.0)
    assert not b.ready(0.0)
    b.add(PodRef(key="ns/a", uid="a"), 0.0)
    b.add(PodRef(key="ns/b", uid="b"), 0.8)
    assert not b.add(PodRef(key="ns/a", uid="a"), 0.9)  # the same pod again is not new
    assert not b.ready(1.7)
    assert b.ready(1.8)
    assert [p.uid for p in b.take()] == ["a", "b"] and not b.ready(5.0)


def test_window_closes_after_ten_seconds_however_many_pods_keep_coming() -> None:
    b = Batcher(idle_seconds=1.0, max_seconds=10.0)
    for i in range(20):
        b.add(PodRef(key=f"ns/p{i}", uid=f"p{i}"), i * 0.5)
    assert b.ready(10.0) and len(b.take()) == 20


def test_the_batch_id_depends_only_on_the_pod_uids() -> None:
    a, b = PodRef(key="ns/a", uid="a"), PodRef(key="ns/b", uid="b")
    assert batch_workflow_id([a, b]) == batch_workflow_id([b, a]) != batch_workflow_id([a])
    assert batch_workflow_id([a]).startswith("provision-")


def _record_starts(monkeypatch: Any, covered_uids: frozenset[str] = frozenset()) -> list[list[str]]:
    """The intake's workflow starts, recorded (pod uids per batch) instead of made; `covered_uids` are the pods a
    running provisioning covers."""
    import runtime.pending_pods as pp

    started: list[list[str]] = []

    class Handle:
        def __init__(self, n: int) -> None:
            self.id = f"provision-{n}"

    async def start(client, pods, task_queue, settings):  # type: ignore[no-untyped-def]
        started.append([p.uid for p in pods])
        return Handle(len(started))

    async def covered(self, client):  # type: ignore[no-untyped-def]
        return set(covered_uids)

    monkeypatch.setattr(pp, "start_provisioning", start)
    monkeypatch.setattr(pp.CoveredPods, "read", covered)
    return started


async def test_a_handed_off_pod_is_not_batched_again_within_the_cooldown(monkeypatch) -> None:
    from runtime.pending_pods import IntakeSettings

    started = _record_starts(monkeypatch, frozenset({"uid-covered"}))
    now = [0.0]
    pods = [_pod("a"), _pod("covered")]
    intake = PendingPodIntake(lambda: pods, None, IntakeSettings(task_queue="q", cooldown_seconds=30),  # type: ignore[arg-type]
                              clock=lambda: now[0])
    for t in (0.0, 0.5, 1.0, 1.5, 3.0, 10.0, 31.0, 32.5):
        now[0] = t
        await intake.tick()
    assert started == [["uid-a"], ["uid-a"]]  # once at 1.0 s; again only after the 30 s cooldown; never "covered"


def test_the_cooldown_doubles_with_each_hand_off_up_to_its_ceiling() -> None:
    from runtime.pending_pods import IntakeSettings, cooldown

    s = IntakeSettings(task_queue="q", cooldown_seconds=60, max_cooldown_seconds=300)
    assert [cooldown(s, n) for n in (1, 2, 3, 4, 5, 1000)] == [60, 120, 240, 300, 300, 300]
    assert cooldown(IntakeSettings(task_queue="q", cooldown_seconds=60, max_cooldown_seconds=10), 3) == 60


async def test_a_pod_nothing_helps_is_retried_ever_less_often_and_a_bound_pod_is_forgotten(monkeypatch) -> None:
    """A pod whose batches keep ending with it pending (no NodePool serves it, limits, no capacity) is batched again
    after 10 s, 20 s, 40 s, then every 40 s (the ceiling): never a batch per tick, never more often over time."""
    import runtime.pending_pods as pp
    from runtime.pending_pods import IntakeSettings

    starts: list[float] = []
    now = [0.0]

    class Handle:
        id = "provision-x"

    async def start(client, pods, task_queue, settings):  # type: ignore[no-untyped-def]
        starts.append(now[0])
        return Handle()

    async def covered(self, client):  # type: ignore[no-untyped-def]
        return set()

    monkeypatch.setattr(pp, "start_provisioning", start)
    monkeypatch.setattr(pp.CoveredPods, "read", covered)
    pods = [_pod("stuck")]
    settings = IntakeSettings(task_queue="q", idle_seconds=1, cooldown_seconds=10, max_cooldown_seconds=40)
    intake = PendingPodIntake(lambda: pods, None, settings, clock=lambda: now[0])  # type: ignore[arg-type]
    for step in range(0, 2000):  # 200 s at the intake's 0.1 s granularity
        now[0] = step / 10
        await intake.tick()
    gaps = [round(b - a) for a, b in pairwise(starts)]
    assert gaps == [11, 21, 41, 41, 41, 41], starts  # cooldown + the 1 s batch window each time
    pods[0] = _pod("stuck", nodeName="n1")  # bound: forgotten ...
    now[0] += 0.1
    await intake.tick()
    pods[0] = _pod("stuck")  # ... so pending again it starts over at the first cooldown
    for _ in range(15):
        now[0] += 0.1
        await intake.tick()
    assert len(starts) == 8 and now[0] - starts[-1] < 1


def test_the_pods_of_a_deleting_node_are_batched_as_displaced() -> None:
    """Karpenter's deletingNodePods: a Node being deleted, or whose NodeClaim is, hands its pods to provisioning."""
    from planning.cluster import going_nodes
    from runtime.pending_pods import displaced

    nodes = [{"metadata": {"name": "gone", "deletionTimestamp": "2026-11-23T00:00:00Z"}}, {"metadata": {"name": "ok"}}]
    claims = [{"metadata": {"name": "c1", "deletionTimestamp": "2026-11-23T00:00:00Z"}, "status": {"nodeName": "x"}},
              {"metadata": {"name": "c2"}, "status": {"nodeName": "ok"}}]
    deleting = going_nodes(nodes, claims)
    assert deleting == {"gone", "x"}
    bound = _pod("web", reason=None, nodeName="gone")
    assert displaced(bound, deleting) == PodRef(key="ns/web", uid="uid-web")
    assert displaced(_pod("elsewhere", reason=None, nodeName="ok"), deleting) is None
    ds = _pod("ds", reason=None, nodeName="gone")
    ds["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds"}]
    assert displaced(ds, deleting) is None
    terminating = _pod("t", reason=None, nodeName="gone")
    terminating["metadata"]["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    assert displaced(terminating, deleting) is None


async def test_the_intake_starts_a_batch_for_a_deleting_nodes_pods(monkeypatch) -> None:
    from runtime.pending_pods import IntakeSettings

    started = _record_starts(monkeypatch)
    now = [0.0]
    pods = [_pod("web", reason=None, nodeName="gone"), _pod("db", reason=None, nodeName="live")]
    intake = PendingPodIntake(lambda: pods, None, IntakeSettings(task_queue="q"),  # type: ignore[arg-type]
                              clock=lambda: now[0], deleting=lambda: {"gone"})
    for t in (0.0, 1.5):
        now[0] = t
        await intake.tick()
    assert started == [["uid-web"]]


def test_a_node_draining_under_a_termination_counts_as_deleting() -> None:
    """The intake asks the planner's rule (NodeInfo.going) on raw objects: the same answers, including a claim whose
    instance is terminating."""
    from api import labels
    from planning.cluster import going_nodes

    tainted = {"metadata": {"name": "n1"}, "spec": {"taints": [{"key": labels.DISRUPTED_TAINT_KEY}]}}
    owned = {"metadata": {"name": "c1", "annotations": {labels.TERMINATION_WORKFLOW_ANNOTATION: "terminate-x"}},
             "status": {"nodeName": "n1"}}
    assert going_nodes([tainted], [owned]) == {"n1"}
    assert going_nodes([tainted], [{**owned, "metadata": {"name": "c1"}}]) == set()  # a disruption's candidate
    assert going_nodes([{"metadata": {"name": "n1"}}], [owned]) == set()  # a cancelled termination untainted it
    terminating = {**owned, "metadata": {"name": "c1"},
                   "status": {"nodeName": "n1", "conditions": [{"type": "InstanceTerminating", "status": "True"}]}}
    assert going_nodes([{"metadata": {"name": "n1"}}], [terminating]) == {"n1"}
    deleted = {**owned, "metadata": {"name": "c1", "deletionTimestamp": "2026-11-29T00:00:00Z"}}
    assert going_nodes([], [deleted]) == {"n1"}  # its Node is not listed (yet or any more)


def test_without_the_cache_deleting_nodes_are_listed_at_most_every_two_seconds() -> None:
    from runtime.pending_pods import listed_deleting

    calls: list[str] = []
    nodes = [{"metadata": {"name": "n1", "deletionTimestamp": "2026-11-29T00:00:00Z"}}]

    class Kube:
        def list_nodes(self) -> list[dict[str, Any]]:
            calls.append("nodes")
            return nodes

        def list_node_claims(self) -> list[dict[str, Any]]:
            calls.append("claims")
            return []

    now = [0.0]
    read = listed_deleting(Kube(), every_seconds=2.0, clock=lambda: now[0])
    answers = []
    for t in (0.0, 0.25, 1.75, 2.0, 2.5):
        now[0] = t
        answers.append(read())
        nodes = []  # the node is gone after the first LIST: only the read at 2.0 s sees it
    assert calls == ["nodes", "claims"] * 2
    assert answers == [{"n1"}, {"n1"}, {"n1"}, set(), set()]


def _refused(name: str, message: str) -> dict[str, Any]:
    pod = _pod(name)
    pod["status"]["conditions"][0]["message"] = message
    return pod


async def test_a_pod_kube_scheduler_refused_anew_is_batched_again_without_the_cooldown(monkeypatch) -> None:
    """The cluster its batch planned on has changed (kube-scheduler bound other pods to the room planned for it): it
    is batched again 2 s after its hand-off rather than after the 30 s cooldown, and the doubling starts over."""
    from runtime.pending_pods import IntakeSettings

    started = _record_starts(monkeypatch)
    now = [0.0]
    pods = [_refused("a", "0/93 nodes are available: 93 node(s) had untolerated taint."), _refused("b", "")]
    intake = PendingPodIntake(lambda: pods, None, IntakeSettings(task_queue="q", cooldown_seconds=30),  # type: ignore[arg-type]
                              clock=lambda: now[0])
    for t in (0.0, 1.0):
        now[0] = t
        await intake.tick()
    assert started == [["uid-a", "uid-b"]]
    pods[0] = _refused("a", "0/93 nodes are available: 93 Insufficient cpu.")
    pods[1] = _refused("b", "")  # no message: nothing says the cluster changed
    for t in (1.5, 2.5, 3.0, 4.5):
        now[0] = t
        await intake.tick()
    assert started == [["uid-a", "uid-b"], ["uid-a"]], started  # at 3.0 s (2 s after 1.0) + the 1 s window
    for t in (10.0, 20.0, 30.0, 31.0, 32.0, 34.5, 35.5):  # b after its 30 s; a 30 s after 4.5 (not 60: restarted)
        now[0] = t
        await intake.tick()
    assert started == [["uid-a", "uid-b"], ["uid-a"], ["uid-b"], ["uid-a"]], started


async def test_the_cache_index_gives_the_intake_the_scheduling_notes(monkeypatch) -> None:
    """The worker's path: the candidates and notes come from runtime/pending_index.py, not a scan."""
    from runtime.pending_pods import IntakeSettings

    started = _record_starts(monkeypatch)
    now = [0.0]
    notes = {"uid-a": "first"}
    intake = PendingPodIntake(lambda: None, None, IntakeSettings(task_queue="q", cooldown_seconds=30),  # type: ignore[arg-type]
                              clock=lambda: now[0], candidates=lambda: [PodRef(key="ns/a", uid="uid-a")],
                              notes=lambda: dict(notes))
    for t, note in ((0.0, "first"), (1.0, "first"), (2.0, "first"), (3.5, "second"), (4.5, "second")):
        now[0], notes["uid-a"] = t, note
        await intake.tick()
    assert started == [["uid-a"], ["uid-a"]]


async def test_a_node_turning_ready_batches_the_pending_pods_again(monkeypatch) -> None:
    """New room came up (kube-scheduler fills it with the pods planned there or with others): each pending pod is
    planned again 2 s after its hand-off at the earliest, however long its cooldown."""
    from runtime.pending_pods import IntakeSettings

    started = _record_starts(monkeypatch)
    now, ready = [0.0], [0]
    pods = [_refused("a", "same"), _refused("b", "same")]
    intake = PendingPodIntake(lambda: pods, None, IntakeSettings(task_queue="q", cooldown_seconds=60),  # type: ignore[arg-type]
                              clock=lambda: now[0], ready_nodes=lambda: ready[0])
    for t in (0.0, 1.0, 1.5):
        now[0] = t
        await intake.tick()
    ready[0] = 1  # a Node turned Ready at 1.5 s
    for t in (2.0, 2.5, 3.0, 4.0, 10.0, 30.0):
        now[0] = t
        await intake.tick()
    assert started == [["uid-a", "uid-b"], ["uid-a", "uid-b"]], started  # added at 3.0 (1.0 + 2 s), started at 4.0


async def test_a_window_too_large_for_one_input_starts_each_part_and_covers_every_pod(monkeypatch) -> None:
    """contracts/provisioning.py batch_parts: 16,000 pods of these names are three parts, each its own start."""
    from runtime.pending_pods import IntakeSettings

    started = _record_starts(monkeypatch)
    now = [0.0]
    pods = [_pod(f"web-{i:05d}") for i in range(16_000)]
    intake = PendingPodIntake(lambda: pods, None, IntakeSettings(task_queue="q"),  # type: ignore[arg-type]
                              clock=lambda: now[0])
    for t in (0.0, 1.5):
        now[0] = t
        await intake.tick()
    assert len(started) == 3 and sorted(u for part in started for u in part) == sorted(
        p["metadata"]["uid"] for p in pods)
    assert intake.started == ["provision-1", "provision-2", "provision-3"]
