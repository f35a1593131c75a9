"""The NodeClaim conditions disruption and termination write, as Karpenter writes them (docs/semantics.md §18).

- `DisruptionReason` True, reason and message the command's reason (Drifted, Empty, Underutilized, ...), when a
  disruption taints its candidates; removed when it rolls back (pkg/controllers/disruption/queue.go).
- `VolumesDetached`: Unknown/AwaitingVolumeDetachment while attachments remain, True once none do, False/
  TerminationGracePeriodElapsed when the deadline passes first (pkg/controllers/node/termination/controller.go).
- `InstanceTerminating` True once the instance's termination was asked for (same file, awaitInstanceTermination).
- `Drifted` for NodePool drift (NodePoolDrifted, RequirementsDrifted, InstanceTypeNotFound:
  pkg/controllers/nodeclaim/disruption/drift.go),
  which wins over the EC2NodeClass reasons the NodeClassWorkflow writes (activities/nodeclass_drift.py).
(`Drained` is termination_markers'.)
Each function returns a Change for KubeClient.update: the status patch, or None when the claim already says so.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from api.nodeclaim import DISRUPTION_REASON, DRIFTED, INSTANCE_TERMINATING, VOLUMES_DETACHED
from planning.lifecycle.conditions import FALSE, TRUE, UNKNOWN, condition, conditions_of, with_condition

Obj = dict[str, Any]
Change = Callable[[Obj], Obj | None]
AWAITING_VOLUME_DETACHMENT = "AwaitingVolumeDetachment"
GRACE_PERIOD_ELAPSED = "TerminationGracePeriodElapsed"
NODEPOOL_DRIFT_REASONS = frozenset({"NodePoolDrifted", "RequirementsDrifted", "InstanceTypeNotFound"})


def set_condition(ctype: str, status: str, reason: str, message: str, now: datetime) -> Change:
    """Set `ctype` (lastTransitionTime moves only when the status does); nothing when status and reason hold."""

    def change(obj: Obj) -> Obj | None:
        current = condition(obj, ctype)
        if current is not None and current.get("status") == status and current.get("reason") == reason:
            return None
        return {"status": {"conditions": with_condition(conditions_of(obj), ctype, status, reason, message, now)}}

    return change


def clear_condition(ctype: str) -> Change:
    def change(obj: Obj) -> Obj | None:
        conds = conditions_of(obj)
        if condition(obj, ctype) is None:
            return None
        return {"status": {"conditions": [c for c in conds if c.get("type") != ctype]}}

    return change


def disruption_reason(reason: str, now: datetime) -> Change:
    return set_condition(DISRUPTION_REASON, TRUE, reason, reason, now)


def no_disruption_reason() -> Change:
    return clear_condition(DISRUPTION_REASON)


def volumes_detached(detached: bool, deadline_passed: bool, now: datetime) -> Change:
    """True when nothing is attached any more; else Unknown while waiting, False once the deadline passed."""
    if detached:
        return set_condition(VOLUMES_DETACHED, TRUE, VOLUMES_DETACHED, "", now)
    if deadline_passed:
        return set_condition(VOLUMES_DETACHED, FALSE, GRACE_PERIOD_ELAPSED, GRACE_PERIOD_ELAPSED, now)
    return set_condition(VOLUMES_DETACHED, UNKNOWN, AWAITING_VOLUME_DETACHMENT, AWAITING_VOLUME_DETACHMENT, now)


def instance_terminating(now: datetime) -> Change:
    return set_condition(INSTANCE_TERMINATING, TRUE, INSTANCE_TERMINATING, "", now)


def nodepool_drifted(reason: str | None, now: datetime) -> Change:
    """Drifted True with a NodePool drift reason; with None, remove a Drifted condition that has one (a
    Drifted of another reason, the class's, is not ours to clear)."""
    if reason is not None:
        return set_condition(DRIFTED, TRUE, reason, reason, now)

    def change(obj: Obj) -> Obj | None:
        current = condition(obj, DRIFTED)
        if current is None or current.get("reason") not in NODEPOOL_DRIFT_REASONS:
            return None
        return clear_condition(DRIFTED)(obj)

    return change
