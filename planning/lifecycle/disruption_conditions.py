"""The NodeClaim conditions disruption and termination write, as Karpenter writes them (docs/semantics.md §18).

- `DisruptionReason` True, reason and message the command's reason (Drifted, Empty, Underutilized, ...), when a
  disruption taints its candidates; removed when it rolls back (pkg/controllers/disruption/queue.go).
- `VolumesDetached`: Unknown/AwaitingVolumeDetachment while attachments remain, True once none do, False/
  TerminationGracePeriodElapsed when the deadline passes first (pkg/controllers/node/termination/controller.go).
- `InstanceTerminating` True once the instance's termination was asked for (same file, awaitInstanceTermination).
- `Drifted` for NodePool drift (NodePoolDrifted, RequirementsDrifted, InstanceTypeNotFound:
  pkg/controllers/nodeclaim/disruption/drift.go),
  which wins over the EC2NodeClass reasons the NodeClassWorkflow writes (activities/nodeclass_drift.py).
- `Ready`, Karpenter's root condition over `Launched`, `Registered` and `Initialized` (operatorpkg
  status/condition_set.go, recomputed on every write of a dependent): `with_ready`.
(`Drained` is termination_markers'.)
Each function returns a Change for KubeClient.update: the status patch, or None when the claim already says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from api.nodeclaim import (
    DISRUPTION_REASON,
    DRIFTED,
    INITIALIZED,
    INSTANCE_TERMINATING,
    LAUNCHED,
    REGISTERED,
    VOLUMES_DETACHED,
)
from api.timestamps import parse_time
from planning.lifecycle.conditions import FALSE, TRUE, UNKNOWN, condition, conditions_of, with_condition

Obj = dict[str, Any]
Change = Callable[[Obj], Obj | None]
AWAITING_VOLUME_DETACHMENT = "AwaitingVolumeDetachment"
GRACE_PERIOD_ELAPSED = "TerminationGracePeriodElapsed"
NODEPOOL_DRIFT_REASONS = frozenset({"NodePoolDrifted", "RequirementsDrifted", "InstanceTypeNotFound"})
READY = "Ready"
READY_DEPENDENTS = (LAUNCHED, REGISTERED, INITIALIZED)  # Karpenter's NodeClaim StatusConditions()
RECONCILING_DEPENDENTS = "ReconcilingDependents"  # the root's reason while a dependent is Unknown
UNHEALTHY_DEPENDENTS = "UnhealthyDependents"  # ... and once one is False


def with_ready(conds: Sequence[Obj], created: datetime | None, now: datetime) -> list[Obj]:
    """`conds` with the root condition `Ready` recomputed, as operatorpkg does after every condition write:
    True (reason Ready) when Launched, Registered and Initialized are all True; else False/UnhealthyDependents
    when one is False, Unknown/ReconcilingDependents otherwise, the message naming the dependents that are not
    True, the latest to change first ("Registered=Unknown, Initialized=Unknown"). An absent dependent is Unknown
    since `created`, as Karpenter starts it. kubectl's READY column of a NodeClaim reads this condition."""
    unhealthy: list[tuple[float, int, str, str]] = []
    for order, ctype in enumerate(READY_DEPENDENTS):
        cond = next((c for c in conds if c.get("type") == ctype), None)
        status = str(cond.get("status") or UNKNOWN) if cond is not None else UNKNOWN
        if status == TRUE:
            continue
        since = parse_time(cond.get("lastTransitionTime")) if cond is not None else None
        since = since or created
        unhealthy.append((-(since.timestamp() if since else 0.0), order, ctype, status))
    if not unhealthy:
        return with_condition(conds, READY, TRUE, READY, "", now)
    unhealthy.sort()
    status = FALSE if any(u[3] == FALSE for u in unhealthy) else UNKNOWN
    reason = UNHEALTHY_DEPENDENTS if status == FALSE else RECONCILING_DEPENDENTS
    message = ", ".join(f"{ctype}={st}" for _, _, ctype, st in unhealthy)
    return with_condition(conds, READY, status, reason, message, now)


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
