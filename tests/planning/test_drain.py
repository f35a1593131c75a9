"""Drain rules (Karpenter v1.14.1 terminator, as v1.9.1's): what is skipped, tier order, deadline formula, PDB
selectors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from planning.lifecycle import drain as r
from planning.lifecycle.drain import Tier
from planning.selectors import match_label_selector

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def pod(name: str = "p", *, owner: str | None = None, critical: bool = False, phase: str = "Running",
        tolerations: list | None = None, grace: int | None = 30, deleted_at: datetime | None = None,
        annotations: dict | None = None) -> dict:
    meta: dict = {"name": name, "namespace": "default", "uid": f"uid-{name}", "annotations": annotations or {}}
    if owner == "DaemonSet":
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds"}]
    elif owner == "Node":
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": "n"}]
    if deleted_at:
        meta["deletionTimestamp"] = deleted_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    spec: dict = {"tolerations": tolerations or []}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if critical:
        spec["priorityClassName"] = "system-node-critical"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def test_skips_mirror_terminal_tolerating_and_stuck_pods() -> None:
    assert r.is_waiting_eviction(pod(), NOW)
    assert not r.is_waiting_eviction(pod(owner="Node"), NOW)
    assert not r.is_waiting_eviction(pod(phase="Succeeded"), NOW)
    assert not r.is_waiting_eviction(pod(phase="Failed"), NOW)
    assert not r.is_waiting_eviction(pod(tolerations=[{"operator": "Exists"}]), NOW)
    assert not r.is_waiting_eviction(pod(tolerations=[{"key": "karpenter.sh/disrupted", "operator": "Exists"}]), NOW)
    assert not r.is_waiting_eviction(pod(tolerations=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]), NOW)
    # tolerating another taint (or another effect) does not exempt the pod
    assert r.is_waiting_eviction(pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
                                 NOW)
    assert r.is_waiting_eviction(pod(tolerations=[{"key": "karpenter.sh/disrupted", "operator": "Exists",
                                                   "effect": "NoExecute"}]), NOW)
    assert r.is_waiting_eviction(pod(deleted_at=NOW - timedelta(seconds=30)), NOW)  # terminating still blocks
    assert not r.is_waiting_eviction(pod(deleted_at=NOW - timedelta(minutes=2)), NOW)  # stuck: ignored


def test_tiers_in_order() -> None:
    pods = [pod("cds", owner="DaemonSet", critical=True), pod("c", critical=True), pod("ds", owner="DaemonSet"),
            pod("plain")]
    assert [r.tier_of(p) for p in pods] == [Tier.CRITICAL_DAEMONSET, Tier.CRITICAL, Tier.DAEMONSET, Tier.PLAIN]
    order = []
    left = list(pods)
    while left:
        tier = r.first_tier(left)
        order.append([p["metadata"]["name"] for p in tier])
        left = [p for p in left if p not in tier]
    assert order == [["plain"], ["ds"], ["c"], ["cds"]]


def _sized(name: str, cpu: str, memory: str, owner: str | None = None) -> dict:
    p = pod(name, owner=owner)
    p["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    return p


def test_a_tier_is_evicted_largest_first_as_the_planner_placed_it() -> None:
    """Requested cpu, then memory, then name: the 64 GiB pod's replacement reaches kube-scheduler before the small
    ones can take the room the plan kept for it (docs/semantics.md §9.2)."""
    pods = [_sized("small", "225m", "500Mi"), _sized("big-mem", "2300m", "64Gi"), _sized("b", "900m", "1Gi"),
            _sized("a", "900m", "1Gi"), _sized("big-cpu", "2300m", "2Gi"), pod("none"),
            _sized("agent", "4", "8Gi", owner="DaemonSet")]
    assert [p["metadata"]["name"] for p in r.first_tier(pods)] == ["big-mem", "big-cpu", "a", "b", "small", "none"]
    assert [p["metadata"]["name"] for p in r.plan_round(pods, None, NOW).evict][:2] == ["big-mem", "big-cpu"]


def test_deadline_formula() -> None:
    deadline = NOW + timedelta(seconds=300)
    p = pod(grace=60)
    assert not r.needs_deadline_delete(p, deadline, NOW + timedelta(seconds=239))
    assert r.needs_deadline_delete(p, deadline, NOW + timedelta(seconds=240))
    assert not r.needs_deadline_delete(p, None, NOW + timedelta(days=9))
    assert r.deadline_grace(deadline, NOW + timedelta(seconds=240)) == 60
    assert r.deadline_grace(deadline, NOW + timedelta(seconds=299, milliseconds=500)) == 1
    assert r.deadline_grace(deadline, deadline + timedelta(seconds=10)) == 1
    # already terminating: deleted again only when its own deletion would end after the deadline
    assert r.needs_deadline_delete(pod(deleted_at=deadline + timedelta(seconds=5)), deadline, NOW)
    assert not r.needs_deadline_delete(pod(deleted_at=deadline - timedelta(seconds=5)), deadline, NOW)
    assert r.grace_seconds(pod(grace=None)) == 30


def test_selector_matching() -> None:
    lbl = {"app": "web", "tier": "front"}
    assert match_label_selector({"matchLabels": {"app": "web"}}, lbl)
    assert not match_label_selector({"matchLabels": {"app": "db"}}, lbl)
    assert match_label_selector({}, lbl)
    assert not match_label_selector(None, lbl)
    assert match_label_selector({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}, lbl)
    assert not match_label_selector({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, lbl)
    assert match_label_selector({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, lbl)
    assert not match_label_selector({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, lbl)


def test_do_not_disrupt() -> None:
    assert r.has_do_not_disrupt(pod(annotations={"karpenter.sh/do-not-disrupt": "true"}))
    assert not r.has_do_not_disrupt(pod(annotations={"karpenter.sh/do-not-disrupt": "false"}))
