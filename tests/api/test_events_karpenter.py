"""api/events.py against Karpenter's events: reasons, types, dedupe windows, what the key holds, and messages.

The expected rows are read from kubernetes-sigs/karpenter v1.14.1 and aws/karpenter-provider-aws v1.14.1 (the
file each row names); a row is (reason, type, dedupe seconds, keyed by more than the object, source file).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from api import events
from api.events import KARPENTER, NODEFLOW, REASONS, EventReason, dedupe_key, interruption_reason, spec_of
from api.interruption import InterruptionKind

CORE = "kubernetes-sigs/karpenter v1.14 pkg/controllers/"
AWS = "aws/karpenter-provider-aws v1.14 pkg/controllers/interruption/events/events.go"
POD = "kubernetes-sigs/karpenter v1.14 pkg/utils/pod/events.go"

# (reason, type, DedupeTimeout in s, DedupeValues beyond the object's UID/name, file)
KARPENTER_EVENTS: list[tuple[str, str, float, bool, str]] = [
    ("DisruptionBlocked", "Normal", 120, False, CORE + "disruption/events/events.go"),  # Blocked
    ("DisruptionLaunching", "Normal", 120, True, CORE + "disruption/events/events.go"),  # UID, reason
    ("DisruptionTerminating", "Normal", 120, True, CORE + "disruption/events/events.go"),  # UID, reason
    ("DisruptionWaitingReadiness", "Normal", 120, False, CORE + "disruption/events/events.go"),
    ("Unconsolidatable", "Normal", 900, False, CORE + "disruption/events/events.go"),
    ("ConsolidationApproved", "Normal", 120, True, CORE + "disruption/events/events.go"),  # by score (not read)
    ("FailedScheduling", "Warning", 300, False, CORE + "provisioning/scheduling/events.go"),
    ("NoCompatibleInstanceTypes", "Warning", 60, False, CORE + "provisioning/scheduling/events.go"),
    ("Nominated", "Normal", 120, False, CORE + "provisioning/scheduling/events.go"),
    ("NodeRepairBlocked", "Warning", 900, False, CORE + "node/health/events.go"),
    ("Disrupted", "Normal", 120, False, CORE + "node/termination/terminator/events/events.go"),
    ("Evicted", "Normal", 120, False, CORE + "node/termination/terminator/events/events.go"),
    ("FailedDraining", "Warning", 120, False, CORE + "node/termination/terminator/events/events.go"),
    ("AwaitingVolumeDetachment", "Normal", 120, False, CORE + "node/termination/terminator/events/events.go"),
    ("TerminationGracePeriodExpiring", "Warning", 120, False, CORE + "node/termination/terminator/events/events.go"),
    ("InsufficientCapacityError", "Warning", 120, False, CORE + "nodeclaim/lifecycle/events.go"),
    ("NodeClassNotReady", "Warning", 120, False, CORE + "nodeclaim/lifecycle/events.go"),
    ("SpotInterrupted", "Warning", 120, False, AWS),
    ("SpotRebalanceRecommendation", "Normal", 120, False, AWS),
    ("InstanceStopping", "Warning", 120, False, AWS),
    ("InstanceTerminating", "Warning", 120, False, AWS),
    ("InstanceUnhealthy", "Warning", 120, False, AWS),
    ("TerminatingOnInterruption", "Warning", 120, False, AWS),
    ("WaitingOnNodeClaimTermination", "Normal", 120, False,
     "aws/karpenter-provider-aws v1.14 pkg/controllers/nodeclass/events.go"),
    ("InvalidDoNotDisruptAnnotation", "Warning", 120, True, POD),  # UID, the error
    ("DoNotDisruptUntil", "Normal", 120, True, POD),  # UID, the instant
    ("DoNotDisruptGracePeriodElapsed", "Normal", 120, False, POD),
]
# Karpenter's reasons nodeflow has no occasion for (consolidation candidates and validation rejections, consistency
# checks, capacity reservations; a Balanced rejection records no Event in Karpenter either): listed so a reason
# added to EventReason is checked against this file too.
NOT_EMITTED = {"ConsolidationCandidate", "ConsolidationRejected", "FailedTermination",
               "FailedConsistencyCheck", "UnregisteredTaintMissing", "CapacityReservationInstanceInterrupted"}


@pytest.mark.parametrize(("reason", "type_", "seconds", "keyed", "source"), KARPENTER_EVENTS)
def test_each_karpenter_reason_is_typed_and_deduplicated_as_karpenter_does(
        reason: str, type_: str, seconds: float, keyed: bool, source: str) -> None:
    spec = REASONS[EventReason(reason)]
    assert (spec.type, spec.dedupe_seconds, spec.by_message) == (type_, seconds, keyed)
    assert spec.source.startswith(source.split(" pkg/")[0]) and spec.source.endswith(source.split("/")[-1])


def test_nodeflow_keeps_its_own_reasons_only_where_karpenter_has_no_word() -> None:
    karpenter = {row[0] for row in KARPENTER_EVENTS}
    own = {r.value for r, spec in REASONS.items() if spec.source == NODEFLOW}
    assert not own & (karpenter | NOT_EMITTED)
    assert {r.value for r in EventReason} == karpenter | own
    # the names the issue found wrong are gone
    assert not {"Disrupting", "InsufficientCapacity", "InstanceStateChange", "InstanceScheduledChange"} & {
        r.value for r in EventReason}
    assert all(spec.source.startswith(KARPENTER) or spec.source.startswith("aws/")
               for r, spec in REASONS.items() if r.value in karpenter)


def test_nodepool_disruption_blocked_keys_on_the_reason_for_one_minute() -> None:
    """NodePoolBlockedForDisruptionReason: DedupeValues (UID, reason), 1 min; Blocked on a Node: UID, 2 min."""
    assert (spec_of("DisruptionBlocked", "NodePool").dedupe_seconds, spec_of("DisruptionBlocked", "Node")
            .dedupe_seconds) == (60, 120)
    drift = dedupe_key("DisruptionBlocked", "NodePool", "", "default", "u1", events.budget_blocks_reason("Drifted"))
    empty = dedupe_key("DisruptionBlocked", "NodePool", "", "default", "u1", events.budget_blocks_reason("Empty"))
    assert drift != empty
    # on a Node the object alone is the key: a second explanation within the window is dropped, as Karpenter drops it
    assert dedupe_key("DisruptionBlocked", "Node", "", "n1", "u", "pdb a") == dedupe_key(
        "DisruptionBlocked", "Node", "", "n1", "u", "pdb b")
    assert dedupe_key("Unconsolidatable", "Node", "", "n1", "u", "x")[0] == "unconsolidatable"


def test_disruption_messages_title_case_the_reason_as_cases_title_does() -> None:
    """disruption/events/events.go: cases.Title(language.Und, cases.NoLower).String(reason)."""
    assert events.launching("underutilized") == "Launching NodeClaim: Underutilized"
    assert events.disrupting("Node", "Drifted") == "Disrupting Node: Drifted"
    assert events.disrupting("NodeClaim", "empty") == "Disrupting NodeClaim: Empty"
    assert events.title("staticDrift") == "StaticDrift"
    assert events.WAITING_READINESS == "Waiting on readiness to continue disruption"
    assert events.budget_blocks_reason("Drifted") == (
        "No allowed disruptions for disruption reason Drifted due to blocking budget")


def test_termination_messages_are_karpenters() -> None:
    """node/termination/terminator/events/events.go and terminator/eviction.go."""
    drifted = {"status": {"conditions": [{"type": "Ready", "status": "True"},
                                         {"type": "DisruptionReason", "status": "True", "reason": "Drifted"}]}}
    assert events.evicted(events.eviction_reason(drifted)) == "Evicted pod: Drifted"
    assert events.evicted(events.eviction_reason({"status": {}})) == "Evicted pod: Forceful Termination"
    assert events.evicted(events.eviction_reason(None)) == "Evicted pod: Forceful Termination"
    assert events.failed_draining(True, "default/web-0", None) == (
        "Failed to drain node, evicting pod violates a PDB (Pod=default/web-0)")
    assert events.failed_draining(False, "default/web-0", "default/web") == (
        "Failed to drain node, eviction does not support multiple PDBs (Pod=default/web-0, "
        "PodDisruptionBudget=default/web)")
    assert events.failed_draining_waiting(3) == "Failed to drain node, 3 pods are waiting to be evicted"
    assert events.grace_period_expiring("2026-01-01T12:00:00Z") == "All pods will be deleted by 2026-01-01T12:00:00Z"
    names = [f"csi-{i}" for i in range(7)]
    assert events.awaiting_volume_detachment(names[:2]) == "Awaiting deletion of bound volumeattachments (csi-0, csi-1)"
    assert events.awaiting_volume_detachment(names) == (
        "Awaiting deletion of bound volumeattachments (csi-0, csi-1, csi-2, csi-3, csi-4 and 2 other(s))")
    at = datetime(2026, 1, 1, 12, 0, 5, tzinfo=UTC)
    assert events.disrupted(at, 20, 30) == (
        "Deleting the pod to accommodate the terminationTime 2026-01-01 12:00:05 +0000 UTC of the node. The pod was "
        "granted 20 seconds of grace-period of its 30 terminationGracePeriodSeconds. This bypasses the PDB of the "
        "pod and the do-not-disrupt annotation.")
    assert events.go_time(datetime(2026, 1, 1, 7, 0, tzinfo=timezone(timedelta(hours=2)))).startswith(
        "2026-01-01 07:00:00 +0200")


def test_provisioning_messages_are_karpenters() -> None:
    """provisioning/scheduling/events.go: NominatePodEvent and NoCompatibleInstanceTypes."""
    assert events.nominated("default-abcde", None) == "Pod should schedule on: nodeclaim/default-abcde"
    assert events.nominated("default-abcde", "ip-10-0-0-1") == (
        "Pod should schedule on: nodeclaim/default-abcde, node/ip-10-0-0-1")
    assert events.nominated(None, "ip-10-0-0-1") == "Pod should schedule on: node/ip-10-0-0-1"
    assert events.NO_COMPATIBLE_INSTANCE_TYPES == (
        "NodePool requirements filtered out all compatible available instance types")
    assert events.no_nodepool_serves("x").startswith("Failed to schedule pod, ")
    assert REASONS[EventReason.NOMINATED].per_second == 5 and REASONS[EventReason.NOMINATED].burst == 10


def test_node_repair_blocked_says_karpenters_sentence_first() -> None:
    """node/health/controller.go: "more than %s nodes are unhealthy in the nodepool" (the percent as "20%")."""
    assert events.node_repair_blocked("default", 2, 3, 0, 20) == (
        "more than 20% nodes are unhealthy in the nodepool (2 of 3 nodes of NodePool default are unhealthy, at most 0 "
        "may be repaired)")


@pytest.mark.parametrize(("kind", "state", "reason", "message"), [
    (InterruptionKind.SPOT_INTERRUPTION, None, "SpotInterrupted", "Spot interruption warning was triggered"),
    (InterruptionKind.REBALANCE_RECOMMENDATION, None, "SpotRebalanceRecommendation",
     "Spot rebalance recommendation was triggered"),
    (InterruptionKind.SCHEDULED_CHANGE, None, "InstanceUnhealthy",
     "An unhealthy warning was triggered for the instance"),
    (InterruptionKind.STATE_CHANGE, "stopping", "InstanceStopping", "Instance is stopping"),
    (InterruptionKind.STATE_CHANGE, "stopped", "InstanceStopping", "Instance is stopping"),
    (InterruptionKind.STATE_CHANGE, "shutting-down", "InstanceTerminating", "Instance is terminating"),
    (InterruptionKind.STATE_CHANGE, "terminated", "InstanceTerminating", "Instance is terminating"),
])
def test_interruption_reasons_split_as_the_provider_does(kind: InterruptionKind, state: str | None, reason: str,
                                                         message: str) -> None:
    """statechange/model.go Kind(): stopping/stopped -> InstanceStopped, else InstanceTerminated; utils.go
    notifyForMessage maps a scheduled change to Unhealthy."""
    got = interruption_reason(kind, state)
    assert (got.value, events.INTERRUPTION_MESSAGES[got]) == (reason, message)
    assert events.terminating_on_interruption("NodeClaim") == "Interruption triggered termination for the NodeClaim"
    assert events.terminating_on_interruption("Node") == "Interruption triggered termination for the Node"


T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("value", "started", "expected"), [
    ("true", T0, None),
    (None, T0, None),
    ("5m", None, None),  # active, fail safe: Karpenter returns before publishing
    ("5m", T0 - timedelta(minutes=2),
     ("DoNotDisruptUntil", "The karpenter.sh/do-not-disrupt grace period will elapse at 2026-01-01T12:03:00Z")),
    ("5m", T0 - timedelta(minutes=5),
     ("DoNotDisruptGracePeriodElapsed", "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now "
                                        "disruptable")),
    ("0s", T0, ("InvalidDoNotDisruptAnnotation",
                'Invalid karpenter.sh/do-not-disrupt annotation: duration "0s" must be positive, ignoring annotation')),
    ("invalid-format", T0, ("InvalidDoNotDisruptAnnotation",
                            'Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "invalid-format" as a '
                            'duration: time: invalid duration "invalid-format", ignoring annotation')),
    ("5", T0, ("InvalidDoNotDisruptAnnotation",
               'Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "5" as a duration: time: missing unit '
               'in duration "5", ignoring annotation')),
])
def test_do_not_disrupt_events_are_karpenters(value: str | None, started: datetime | None,
                                               expected: tuple[str, str] | None) -> None:
    """pkg/utils/pod/scheduling.go IsDoNotDisruptActive and pkg/utils/pod/events.go."""
    got = events.do_not_disrupt_event(value, started, T0)
    assert (None if got is None else (got[0].value, got[1])) == expected
