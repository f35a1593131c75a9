"""Kubernetes Event reasons nodeflow records, and the messages that explain them, in one place.

Reasons are Karpenter's where Karpenter has one (docs/semantics.md §10), so dashboards and alerts written
for Karpenter read nodeflow's Events too. Messages are built here so the planner, the workflows and the
activities word the same thing the same way.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from api.interruption import InterruptionKind


class EventReason(StrEnum):
    # planner decisions (on Nodes, NodeClaims and NodePools)
    DISRUPTION_BLOCKED = "DisruptionBlocked"
    UNCONSOLIDATABLE = "Unconsolidatable"
    NODE_CLASS_NOT_READY = "NodeClassNotReady"  # on a NodePool whose EC2NodeClass is missing or not Ready
    DISRUPTION_POLICY_CONFLICT = "DisruptionPolicyConflict"  # two DisruptionPolicies select one NodePool
    # node repair (on the Node; blocked also on its NodePool)
    NODE_REPAIR = "NodeRepair"  # an unhealthy node past its toleration: terminated forcefully
    NODE_REPAIR_BLOCKED = "NodeRepairBlocked"  # Karpenter's: too much of the pool is unhealthy to repair
    # provisioning (on a pending Pod, on a NodePool)
    FAILED_SCHEDULING = "FailedScheduling"  # Karpenter's reason on a pod no NodePool can serve
    NODEPOOL_LIMITS_REACHED = "NodePoolLimitsReached"  # a pod needs a node but the pool's spec.limits are used up
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"  # every offering of a launch answered ICE: backing off
    PROVISIONING_LAUNCHED = "Launched"  # a NodeClaim launched for pending pods
    # a disruption in flight
    DISRUPTING = "Disrupting"
    DISRUPTION_LAUNCHING = "DisruptionLaunching"
    DISRUPTION_WAITING_READINESS = "DisruptionWaitingReadiness"
    # DisruptionPolicy controls in workflows (docs/semantics.md §15)
    DISRUPTION_ESCALATED = "DisruptionEscalated"  # a graceful disruption's drain blocked past notifyAfter
    DISRUPTION_FORCED = "DisruptionForced"  # ... and past forceAfter: the drain is forced
    DISRUPTION_ABANDONED = "DisruptionAbandoned"  # a required pre-disruption ack never came
    ROLLOUT_HALTED = "RolloutHalted"  # a drift rollout stopped after failed replacements or unhealthy workloads
    # termination
    TERMINATING = "Terminating"
    EVICTED = "Evicted"
    FAILED_DRAINING = "FailedDraining"
    # interruption intake
    SPOT_INTERRUPTED = "SpotInterrupted"
    SPOT_REBALANCE_RECOMMENDATION = "SpotRebalanceRecommendation"
    INSTANCE_SCHEDULED_CHANGE = "InstanceScheduledChange"
    INSTANCE_STATE_CHANGE = "InstanceStateChange"
    COST_LIMIT_REACHED = "CostLimitReached"  # a launch would take a DisruptionPolicy's costPerHour over its limit


# Per-worker dedupe windows, like Karpenter's recorder: a planner pass every 10 s must not repeat itself.
DEDUPE_SECONDS: dict[str, float] = {EventReason.UNCONSOLIDATABLE: 15 * 60, EventReason.DISRUPTION_BLOCKED: 60}
DEFAULT_DEDUPE_SECONDS = 120.0

INTERRUPTION_REASONS: dict[InterruptionKind, EventReason] = {
    InterruptionKind.SPOT_INTERRUPTION: EventReason.SPOT_INTERRUPTED,
    InterruptionKind.REBALANCE_RECOMMENDATION: EventReason.SPOT_REBALANCE_RECOMMENDATION,
    InterruptionKind.SCHEDULED_CHANGE: EventReason.INSTANCE_SCHEDULED_CHANGE,
    InterruptionKind.STATE_CHANGE: EventReason.INSTANCE_STATE_CHANGE,
}


def consolidation_disabled(pool: str) -> str:
    return f'NodePool "{pool}" has consolidation disabled'


def budget_blocks_reason(reason: str) -> str:
    return f"No allowed disruptions for disruption reason {reason} due to blocking budget"


def launching(reason: str) -> str:
    return f"Launching NodeClaim: {reason}"


WAITING_READINESS = "Waiting on readiness to continue disruption"


def disrupting(kind: str, reason: str) -> str:
    return f"Disrupting {kind}: {reason}"


def disruption_stopped(method: str, nodes: list[str], why: str) -> str:
    return f"{method} of {', '.join(nodes)} stopped: {why}"


def terminating(reason: str, taint_key: str) -> str:
    return f"Terminating node ({reason or 'Deleted'}): tainted {taint_key}"


def evicted(pod: str, reason: str) -> str:
    return f"Evicted pod {pod}: {reason or 'Deleted'}"


def failed_draining(pdb_refused: bool, pod: str, pdb: str | None) -> str:
    """A 429 (a PDB forbids it) or the API server's 500 for a pod under several PDBs."""
    why = "evicting pod violates a PDB" if pdb_refused else "eviction does not support multiple PDBs"
    return f"Failed to drain node, {why} (Pod={pod}, PDB={pdb or 'unknown'})"


def no_nodepool_serves(exclusions: str) -> str:
    """On a pending pod: every NodePool and the requirement or taint that excludes it."""
    return f"Failed to schedule pod, no NodePool can serve it: {exclusions}"


def nodepool_limits_reached(pool: str, detail: str, pods: int) -> str:
    return f"NodePool {pool} cannot launch for {pods} pending pod(s): {detail}"


def insufficient_capacity(offerings: list[str], retry_seconds: float | None) -> str:
    """On a NodePool: every offering of a launch answered InsufficientInstanceCapacity, and what happens next."""
    shown = ", ".join(offerings[:6]) + (f" and {len(offerings) - 6} more" if len(offerings) > 6 else "")
    then = f"retrying in {retry_seconds:g}s" if retry_seconds is not None else "giving up for this batch"
    return f"InsufficientInstanceCapacity for every offering ({shown}); {then}"


def node_repair(condition: str, status: str, since: datetime, toleration: timedelta) -> str:
    return (f"Repairing node: condition {condition} has been {status} since {since.strftime('%Y-%m-%dT%H:%M:%SZ')} "
            f"(tolerated {_duration(toleration)}); terminating it now, its pods go to other or new nodes")


def node_repair_blocked(pool: str, unhealthy: int, total: int, allowed: int, percent: int) -> str:
    return (f"Node repair blocked: {unhealthy} of {total} nodes of NodePool {pool} are unhealthy, more than "
            f"{percent}% (at most {allowed})")


def _duration(d: timedelta) -> str:
    """Go style, as Karpenter's durations are written: 30m0s, 1h0m0s, 45s."""
    total = int(d.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"


def provisioning_launched(pods: int) -> str:
    return f"Launched NodeClaim for {pods} pending pod(s)"


def static_limit_reached(limit: int, nodes: int, replicas: int) -> str:
    """On a static NodePool held below its replicas by limits.nodes (NodePoolLimitsReached)."""
    return f"limits.nodes={limit} reached: {nodes} node(s) of {replicas} replicas, no more are launched"


# StaticDrift (planning/static_drift.py): Karpenter's message when the replacement would exceed limits.nodes.
STATIC_DRIFT_AT_LIMIT = "static NodePool is at its node limit and cannot stage a replacement"


def static_drift_waits(pool: str, nodes: int, replicas: int) -> str:
    """A drifted node of a static pool that is still above its replicas: drift waits for the scale-down."""
    return f"static nodepool {pool} has {nodes} nodes for {replicas} replicas: drift waits until it is down to them"


def static_launched(pool: str) -> str:
    """On a NodeClaim a static NodePool launched to reach its replicas."""
    return f"Launched NodeClaim for static NodePool {pool} (spec.replicas)"


# DisruptionPolicy (api/disruption_policy.py, docs/semantics.md §15): calendar, savings threshold, conflicts.
def calendar_exclusion(first: str, last: str, zone: str, until: str) -> str:
    """No voluntary disruption starts during a calendar exclusion (dates inclusive, in the policy's zone)."""
    return f"calendar exclusion {first}..{last} ({zone}) until {until}"


def outside_allow_window(until: str | None) -> str:
    """No voluntary disruption starts outside the policy's allow windows; `until` is when the next one opens."""
    return f"outside allow window until {until}" if until else "outside allow window (none opens within five years)"


def money(value: float) -> str:
    """Dollars with as many decimals as they need, at least two and at most four: 0.05, 0.004, 1.25."""
    text = f"{value:.4f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac.ljust(2, '0')}"


def savings_below(savings: float, threshold: float, pods: int, per_pod: float) -> str:
    """A consolidation move skipped because it saves less than the policy's threshold (plus the per-pod cost)."""
    extra = f" ({pods} pod(s) x ${money(per_pod)})" if per_pod and pods else ""
    return f"savings ${money(savings)}/h below threshold ${money(threshold)}/h{extra}"


def savings_percent_below(percent: float, threshold: float) -> str:
    return f"savings {percent:.1f}% below threshold {threshold:g}%"


def policy_conflict(pool: str, first: str, second: str) -> str:
    return (f"NodePool {pool} is selected by DisruptionPolicies {first} and {second}: no voluntary disruption "
            "starts until one of them no longer selects it")


def disruption_escalated(after: timedelta, blockers: str) -> str:
    return f"Drain blocked for {_duration(after)}: {blockers}"


def disruption_forced(after: timedelta, policy: str) -> str:
    return f"Drain forced after {_duration(after)} blocked (DisruptionPolicy {policy}, escalation.forceAfter)"


def disruption_abandoned(timeout: timedelta, policy: str) -> str:
    return f"Disruption abandoned: no pre-disruption ack within {_duration(timeout)} (DisruptionPolicy {policy})"


def rollout_halted(wave: int, why: str) -> str:
    return f"Drift rollout halted at wave {wave}: {why}"


def rollout_baking_blocked(wave: int, waves: int, until: str) -> str:
    """A drifted node of a pool whose drift rollout bakes (`nodeflow plan`'s blocked reason)."""
    return f"drift rollout wave {wave}/{waves} baking until {until}"


def rollout_halted_blocked(wave: int, waves: int, why: str, pool: str) -> str:
    """A drifted node of a pool whose drift rollout is halted (`nodeflow plan`'s blocked reason)."""
    return f"drift rollout halted at wave {wave}/{waves}: {why or 'no reason given'} (nodeflow rollout resume {pool})"


def cancel_hold(cancelled_at: str, held_until: str, node: str) -> str:
    """A node whose disruption an operator cancelled, held from re-planning (planning/candidates.py)."""
    return f"disruption cancelled by operator at {cancelled_at}, held until {held_until} (nodeflow resume {node})"
