"""Karpenter v1.15's drain (kubernetes-sigs/karpenter#3063): the grace-period deadline's deletions happen in the
drain's rounds, from every tier, and nothing else bypasses a PDB (planning/lifecycle/drain.py `plan_round`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from test_drain import pod

from planning.lifecycle import drain as r

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DEADLINE = NOW + timedelta(seconds=300)


def names(pods: list[dict]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_a_later_tier_pod_past_its_deadline_minus_grace_is_deleted_now() -> None:
    """A critical DaemonSet pod (tier 4) with a 600 s grace cannot finish in the 300 s left: deleted now, while
    tier 1 is still being evicted; the tier-1 pod with a 30 s grace is not due and is evicted."""
    web, agent = pod("web", grace=30), pod("agent", owner="DaemonSet", critical=True, grace=600)
    step = r.plan_round([web, agent], DEADLINE, NOW)
    assert names(step.delete) == ["agent"]
    assert names(step.evict) == ["web"]


def test_a_pod_not_yet_past_its_deadline_minus_grace_is_not_deleted() -> None:
    logs = pod("logs", owner="DaemonSet", grace=299)  # due at deadline - 299 s, one second from now
    web = pod("web", grace=30)
    step = r.plan_round([web, logs], DEADLINE, NOW)
    assert step.delete == []
    assert names(step.evict) == ["web"]  # the DaemonSet tier waits for tier 1
    assert r.next_deadline_delete([web, logs], DEADLINE, NOW) == NOW + timedelta(seconds=1)
    assert names(r.plan_round([web, logs], DEADLINE, NOW + timedelta(seconds=1)).delete) == ["logs"]


def test_pdbs_are_never_bypassed_outside_the_deadline_path() -> None:
    """Without a deadline, or before any pod is due, every pod goes through eviction (which a PDB can refuse) in
    tier order, do-not-disrupt pods included; nothing is deleted."""
    pods = [pod("web"), pod("ds", owner="DaemonSet"), pod("dns", critical=True),
            pod("keep", annotations={"karpenter.sh/do-not-disrupt": "true"}, grace=60)]
    for deadline in (None, NOW + timedelta(hours=1)):
        for at in (NOW, NOW + timedelta(minutes=30)):
            step = r.plan_round(pods, deadline, at)
            assert step.delete == []
            assert sorted(names(step.evict)) == ["keep", "web"]  # the order within a tier: by size (§9.2)
    assert r.next_deadline_delete(pods, None, NOW) is None


def test_due_pods_leave_their_tier_to_the_next() -> None:
    """As Karpenter's Drain: the due pods are taken out before the tiers are formed, so when every tier-1 pod is
    due, tier 2 is evicted in the same round."""
    step = r.plan_round([pod("web", grace=400), pod("ds", owner="DaemonSet", grace=30)], DEADLINE, NOW)
    assert names(step.delete) == ["web"] and names(step.evict) == ["ds"]


def test_a_terminating_pod_is_deleted_again_only_when_its_deletion_ends_after_the_deadline() -> None:
    late = pod("late", deleted_at=DEADLINE + timedelta(seconds=30))
    in_time = pod("in-time", deleted_at=DEADLINE - timedelta(seconds=30))
    step = r.plan_round([late, in_time], DEADLINE, NOW)
    assert names(step.delete) == ["late"]
    assert names(step.evict) == ["in-time"]  # left to finish; it still blocks the later tiers
    assert r.next_deadline_delete([late, in_time], DEADLINE, NOW) is None


def test_the_earlier_deadline_wins() -> None:
    later = DEADLINE + timedelta(minutes=5)
    assert r.earlier_deadline(DEADLINE, later) == DEADLINE
    assert r.earlier_deadline(later, DEADLINE) == DEADLINE
    assert r.earlier_deadline(None, DEADLINE) == DEADLINE
    assert r.earlier_deadline(DEADLINE, None) == DEADLINE
    assert r.earlier_deadline(None, None) is None


def test_reschedulable_pods_are_those_disruption_initiated_counts() -> None:
    """kubernetes-sigs/karpenter#3015's count: no DaemonSet or mirror pod; a terminating StatefulSet pod counts."""
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}
    db = pod("db", deleted_at=NOW)
    db["metadata"]["ownerReferences"] = [sts]
    assert r.is_reschedulable(pod("web"))
    assert r.is_reschedulable(db)
    assert not r.is_reschedulable(pod("ds", owner="DaemonSet"))
    assert not r.is_reschedulable(pod("static", owner="Node"))
    assert not r.is_reschedulable(pod("gone", deleted_at=NOW))
    assert not r.is_reschedulable(pod("done", phase="Succeeded"))
