"""Kubernetes Event reasons nodeflow records, and the messages that explain them, in one place.

Reasons are Karpenter's where Karpenter has one (docs/semantics.md §10), so dashboards and alerts written
for Karpenter read nodeflow's Events too. Messages are built here so the planner, the workflows and the
activities word the same thing the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from api.duration import DurationError, parse_duration
from api.interruption import InterruptionKind


class EventReason(StrEnum):
    """Karpenter's reasons (kubernetes-sigs/karpenter v1.14 `pkg/events/reason.go`, each controller's `events.go`;
    aws/karpenter-provider-aws `pkg/controllers/interruption/events/events.go`), then nodeflow's own for what
    Karpenter has no word for. REASONS below says where each comes from."""

    # disruption (on Nodes, NodeClaims and NodePools)
    DISRUPTION_BLOCKED = "DisruptionBlocked"
    DISRUPTION_LAUNCHING = "DisruptionLaunching"
    DISRUPTION_TERMINATING = "DisruptionTerminating"
    DISRUPTION_WAITING_READINESS = "DisruptionWaitingReadiness"
    UNCONSOLIDATABLE = "Unconsolidatable"
    CONSOLIDATION_APPROVED = "ConsolidationApproved"  # a Balanced pool's score passed (v1.14 `balanced.go`)
    # provisioning/scheduling (on Pods and NodePools)
    FAILED_SCHEDULING = "FailedScheduling"
    NO_COMPATIBLE_INSTANCE_TYPES = "NoCompatibleInstanceTypes"
    NOMINATED = "Nominated"
    # node/health
    NODE_REPAIR_BLOCKED = "NodeRepairBlocked"
    # node/termination/terminator
    DISRUPTED = "Disrupted"  # on a Pod deleted at the node's termination deadline
    EVICTED = "Evicted"
    FAILED_DRAINING = "FailedDraining"
    AWAITING_VOLUME_DETACHMENT = "AwaitingVolumeDetachment"
    TERMINATION_GRACE_PERIOD_EXPIRING = "TerminationGracePeriodExpiring"
    # nodeclaim/lifecycle
    INSUFFICIENT_CAPACITY_ERROR = "InsufficientCapacityError"
    NODE_CLASS_NOT_READY = "NodeClassNotReady"
    # the AWS provider's interruption controller (on NodeClaim and Node)
    SPOT_INTERRUPTED = "SpotInterrupted"
    SPOT_REBALANCE_RECOMMENDATION = "SpotRebalanceRecommendation"
    INSTANCE_STOPPING = "InstanceStopping"
    INSTANCE_TERMINATING = "InstanceTerminating"
    INSTANCE_UNHEALTHY = "InstanceUnhealthy"  # a scheduled change (AWS Health) or a failed status check
    TERMINATING_ON_INTERRUPTION = "TerminatingOnInterruption"
    # the AWS provider's nodeclass controller: a deleted EC2NodeClass whose NodeClaims are still there
    WAITING_ON_NODECLAIM_TERMINATION = "WaitingOnNodeClaimTermination"
    # pkg/utils/pod: a pod's karpenter.sh/do-not-disrupt duration, seen by the disruption pass
    INVALID_DO_NOT_DISRUPT_ANNOTATION = "InvalidDoNotDisruptAnnotation"
    DO_NOT_DISRUPT_UNTIL = "DoNotDisruptUntil"
    DO_NOT_DISRUPT_GRACE_PERIOD_ELAPSED = "DoNotDisruptGracePeriodElapsed"

    # ---- nodeflow's own: Karpenter has no word for these ----
    DISRUPTION_POLICY_CONFLICT = "DisruptionPolicyConflict"  # two DisruptionPolicies select one NodePool
    NODE_REPAIR = "NodeRepair"  # an unhealthy node past its toleration: terminated forcefully (Karpenter only logs)
    # a capacity block within 40 minutes of its end: its NodeClaims are deleted (Karpenter only logs)
    CAPACITY_BLOCK_EXPIRING = "CapacityBlockExpiring"
    NODEPOOL_LIMITS_REACHED = "NodePoolLimitsReached"  # a pod needs a node but the pool's spec.limits are used up
    PROVISIONING_LAUNCHED = "Launched"  # a NodeClaim launched for pending pods (or a static pool's replicas)
    DISRUPTION_ESCALATED = "DisruptionEscalated"  # a graceful disruption's drain blocked past notifyAfter
    DISRUPTION_FORCED = "DisruptionForced"  # ... and past forceAfter: the drain is forced
    DISRUPTION_ABANDONED = "DisruptionAbandoned"  # a required pre-disruption ack never came
    ROLLOUT_HALTED = "RolloutHalted"  # a drift rollout stopped after failed replacements or unhealthy workloads
    TERMINATING = "Terminating"  # the termination tainted the node and starts its drain
    TERMINATED = "Terminated"  # the instance is gone; the finalizers come off
    TERMINATION_CANCELLED = "TerminationCancelled"  # an operator cancelled a termination before the instance went
    COST_LIMIT_REACHED = "CostLimitReached"  # a launch would take a DisruptionPolicy's costPerHour over its limit
    AWAITING_JOB_COMPLETION = "AwaitingJobCompletion"  # drain.jobs Wait: the drain leaves Job pods to finish
    SPOT_FALLBACK = "SpotFallback"  # a NodeClaim launched on-demand because EC2 refused spot (semantics §15.5)
    CLOUD_UNAUTHORIZED = "CloudUnauthorized"  # EC2 answered UnauthorizedOperation: the message names the IAM action
    # validation found a consolidation's candidates fit on the other nodes: deleted without the planned replacement
    CONSOLIDATION_WITHOUT_REPLACEMENT = "ConsolidationWithoutReplacement"


NORMAL, WARNING = "Normal", "Warning"
KARPENTER = "kubernetes-sigs/karpenter v1.14 "
AWS = "aws/karpenter-provider-aws v1.14 "
NODEFLOW = "nodeflow"
DEFAULT_DEDUPE_SECONDS = 120.0  # Karpenter's recorder (pkg/events/recorder.go): defaultDedupeTimeout


@dataclass(frozen=True, slots=True)
class ReasonSpec:
    """How one reason is recorded: its type, how long a repeat is suppressed, and what the repeat is.

    Karpenter's recorder drops an Event whose key (reason + DedupeValues) it published within DedupeTimeout.
    Its DedupeValues are the involved object, sometimes with the disruption reason (which nodeflow's message
    carries): `by_message` False keys on the object alone (a new message within the window is dropped, as
    Karpenter drops it); True keys on the message too (each distinct explanation is news)."""

    type: str
    source: str
    dedupe_seconds: float = DEFAULT_DEDUPE_SECONDS
    by_message: bool = False
    per_second: float | None = None  # a token bucket across objects (Karpenter's PodNominationRateLimiter)
    burst: int = 0


_DISRUPTION = KARPENTER + "pkg/controllers/disruption/events/events.go"
_SCHEDULING = KARPENTER + "pkg/controllers/provisioning/scheduling/events.go"
_TERMINATOR = KARPENTER + "pkg/controllers/node/termination/terminator/events/events.go"
_LIFECYCLE = KARPENTER + "pkg/controllers/nodeclaim/lifecycle/events.go"
_HEALTH = KARPENTER + "pkg/controllers/node/health/events.go"
_INTERRUPTION = AWS + "pkg/controllers/interruption/events/events.go"
_POD = KARPENTER + "pkg/utils/pod/events.go"
_NODECLASS = AWS + "pkg/controllers/nodeclass/events.go"

R = EventReason
REASONS: dict[EventReason, ReasonSpec] = {
    R.DISRUPTION_BLOCKED: ReasonSpec(NORMAL, _DISRUPTION),  # Blocked: node/nodeclaim UID
    R.DISRUPTION_LAUNCHING: ReasonSpec(NORMAL, _DISRUPTION, by_message=True),  # UID + reason
    R.DISRUPTION_TERMINATING: ReasonSpec(NORMAL, _DISRUPTION, by_message=True),  # UID + reason
    R.DISRUPTION_WAITING_READINESS: ReasonSpec(NORMAL, _DISRUPTION),
    R.UNCONSOLIDATABLE: ReasonSpec(NORMAL, _DISRUPTION, dedupe_seconds=15 * 60),
    # the event function is not in the public source read; its message carries the score, so each score is news
    R.CONSOLIDATION_APPROVED: ReasonSpec(NORMAL, _DISRUPTION, by_message=True),
    R.FAILED_SCHEDULING: ReasonSpec(WARNING, _SCHEDULING, dedupe_seconds=5 * 60),
    R.NO_COMPATIBLE_INSTANCE_TYPES: ReasonSpec(WARNING, _SCHEDULING, dedupe_seconds=60),
    R.NOMINATED: ReasonSpec(NORMAL, _SCHEDULING, per_second=5, burst=10),
    R.NODE_REPAIR_BLOCKED: ReasonSpec(WARNING, _HEALTH, dedupe_seconds=15 * 60),
    R.DISRUPTED: ReasonSpec(NORMAL, _TERMINATOR),
    R.EVICTED: ReasonSpec(NORMAL, _TERMINATOR),
    R.FAILED_DRAINING: ReasonSpec(WARNING, _TERMINATOR),
    R.AWAITING_VOLUME_DETACHMENT: ReasonSpec(NORMAL, _TERMINATOR),
    R.TERMINATION_GRACE_PERIOD_EXPIRING: ReasonSpec(WARNING, _TERMINATOR),
    R.INSUFFICIENT_CAPACITY_ERROR: ReasonSpec(WARNING, _LIFECYCLE),
    R.NODE_CLASS_NOT_READY: ReasonSpec(WARNING, _LIFECYCLE),
    R.SPOT_INTERRUPTED: ReasonSpec(WARNING, _INTERRUPTION),
    R.SPOT_REBALANCE_RECOMMENDATION: ReasonSpec(NORMAL, _INTERRUPTION),
    R.INSTANCE_STOPPING: ReasonSpec(WARNING, _INTERRUPTION),
    R.INSTANCE_TERMINATING: ReasonSpec(WARNING, _INTERRUPTION),
    R.INSTANCE_UNHEALTHY: ReasonSpec(WARNING, _INTERRUPTION),
    R.TERMINATING_ON_INTERRUPTION: ReasonSpec(WARNING, _INTERRUPTION),
    R.WAITING_ON_NODECLAIM_TERMINATION: ReasonSpec(NORMAL, _NODECLASS),  # DedupeValues: the class's UID
    R.INVALID_DO_NOT_DISRUPT_ANNOTATION: ReasonSpec(WARNING, _POD, by_message=True),  # UID + the error
    R.DO_NOT_DISRUPT_UNTIL: ReasonSpec(NORMAL, _POD, by_message=True),  # UID + the instant
    R.DO_NOT_DISRUPT_GRACE_PERIOD_ELAPSED: ReasonSpec(NORMAL, _POD),
    R.DISRUPTION_POLICY_CONFLICT: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.NODE_REPAIR: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.CAPACITY_BLOCK_EXPIRING: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.NODEPOOL_LIMITS_REACHED: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.PROVISIONING_LAUNCHED: ReasonSpec(NORMAL, NODEFLOW, by_message=True),
    R.DISRUPTION_ESCALATED: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.DISRUPTION_FORCED: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.DISRUPTION_ABANDONED: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.ROLLOUT_HALTED: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.TERMINATING: ReasonSpec(NORMAL, NODEFLOW, by_message=True),
    R.TERMINATED: ReasonSpec(NORMAL, NODEFLOW, by_message=True),
    R.TERMINATION_CANCELLED: ReasonSpec(NORMAL, NODEFLOW, by_message=True),
    R.COST_LIMIT_REACHED: ReasonSpec(WARNING, NODEFLOW, by_message=True),
    R.AWAITING_JOB_COMPLETION: ReasonSpec(NORMAL, NODEFLOW),  # once per node per 2 min, as FailedDraining it replaces
    R.SPOT_FALLBACK: ReasonSpec(NORMAL, NODEFLOW),  # once per NodeClaim: recorded at its launch
    R.CLOUD_UNAUTHORIZED: ReasonSpec(WARNING, NODEFLOW, by_message=True),  # on the NodePool whose launch was refused
    R.CONSOLIDATION_WITHOUT_REPLACEMENT: ReasonSpec(NORMAL, NODEFLOW, by_message=True),  # on the NodePool
}

# Where one reason is recorded differently on one kind of object: Karpenter's NodePool DisruptionBlocked keys on
# (UID, disruption reason) for 1 min (NodePoolBlockedForDisruptionReason; nodeflow's calendar holds and stopped
# disruptions share it); nodeflow's InsufficientCapacityError sits on the NodePool (one per launch round), not on
# a NodeClaim that never got an instance.
KIND_OVERRIDES: dict[tuple[EventReason, str], ReasonSpec] = {
    (R.DISRUPTION_BLOCKED, "NodePool"): ReasonSpec(NORMAL, _DISRUPTION, dedupe_seconds=60, by_message=True),
    (R.NODE_REPAIR_BLOCKED, "NodePool"): ReasonSpec(WARNING, NODEFLOW, dedupe_seconds=15 * 60, by_message=True),
    (R.INSUFFICIENT_CAPACITY_ERROR, "NodePool"): ReasonSpec(WARNING, NODEFLOW, by_message=True),
    # v1.15 (kubernetes-sigs/karpenter#3143) also puts it on each pod of the failed launch; keyed by message, so each
    # ICE round's NodeClaim is news to the pod.
    (R.INSUFFICIENT_CAPACITY_ERROR, "Pod"): ReasonSpec(WARNING, _LIFECYCLE, by_message=True),
    (R.NODE_CLASS_NOT_READY, "NodePool"): ReasonSpec(WARNING, NODEFLOW, by_message=True),
}
_UNKNOWN = ReasonSpec("", NODEFLOW, by_message=True)  # type "": the emitter's


def spec_of(reason: str, kind: str) -> ReasonSpec:
    """How `reason` on a `kind` is recorded; an unlisted reason: 2 min, keyed by message, the emitter's type."""
    try:
        r = EventReason(reason)
    except ValueError:
        return _UNKNOWN
    return KIND_OVERRIDES.get((r, kind)) or REASONS.get(r, _UNKNOWN)


def dedupe_key(reason: str, kind: str, namespace: str, name: str, uid: str | None, message: str) -> tuple[str, ...]:
    """Karpenter's `<reason>-<dedupe values>`: the involved object, and the message where `by_message`."""
    extra = (message,) if spec_of(reason, kind).by_message else ()
    return (reason.lower(), kind, namespace, name, uid or "", *extra)


INTERRUPTION_REASONS: dict[InterruptionKind, EventReason] = {
    InterruptionKind.SPOT_INTERRUPTION: EventReason.SPOT_INTERRUPTED,
    InterruptionKind.REBALANCE_RECOMMENDATION: EventReason.SPOT_REBALANCE_RECOMMENDATION,
    InterruptionKind.SCHEDULED_CHANGE: EventReason.INSTANCE_UNHEALTHY,
    InterruptionKind.STATE_CHANGE: EventReason.INSTANCE_TERMINATING,
}
STOPPING_STATES = frozenset({"stopping", "stopped"})  # statechange/model.go: InstanceStoppedKind, else Terminated

INTERRUPTION_MESSAGES: dict[EventReason, str] = {
    EventReason.SPOT_INTERRUPTED: "Spot interruption warning was triggered",
    EventReason.SPOT_REBALANCE_RECOMMENDATION: "Spot rebalance recommendation was triggered",
    EventReason.INSTANCE_STOPPING: "Instance is stopping",
    EventReason.INSTANCE_TERMINATING: "Instance is terminating",
    EventReason.INSTANCE_UNHEALTHY: "An unhealthy warning was triggered for the instance",
}


def interruption_reason(kind: InterruptionKind, state: str | None) -> EventReason:
    """The provider's notifyForMessage: a state change splits by the EC2 state (stopping/stopped -> Stopping)."""
    if kind is InterruptionKind.STATE_CHANGE and state in STOPPING_STATES:
        return EventReason.INSTANCE_STOPPING
    return INTERRUPTION_REASONS[kind]


def terminating_on_interruption(kind: str) -> str:
    """TerminatingOnInterruption's message on the NodeClaim ("NodeClaim") or the Node ("Node")."""
    return f"Interruption triggered termination for the {kind}"


def do_not_disrupt_event(value: str | None, started: datetime | None, at: datetime
                         ) -> tuple[EventReason, str] | None:
    """The Event Karpenter's IsDoNotDisruptActive publishes for a pod's do-not-disrupt value (pkg/utils/pod/
    scheduling.go): none for "true", absent, or a duration on a pod not started yet (active, fail safe)."""
    if value is None or value == "true":
        return None
    try:
        d = parse_duration(value)
    except DurationError:
        unit = "missing unit in duration" if value.strip().lstrip("+-").replace(".", "").isdigit() else \
            "invalid duration"
        why = f'failed to parse "{value}" as a duration: time: {unit} "{value}"'
        return EventReason.INVALID_DO_NOT_DISRUPT_ANNOTATION, invalid_do_not_disrupt(why)
    if d <= timedelta(0):
        why = f'duration "{value}" must be positive'
        return EventReason.INVALID_DO_NOT_DISRUPT_ANNOTATION, invalid_do_not_disrupt(why)
    if started is None:
        return None
    if at - started < d:
        until = (started + d).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return EventReason.DO_NOT_DISRUPT_UNTIL, f"The karpenter.sh/do-not-disrupt grace period will elapse at {until}"
    return (EventReason.DO_NOT_DISRUPT_GRACE_PERIOD_ELAPSED,
            "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable")


def invalid_do_not_disrupt(why: str) -> str:
    return f"Invalid karpenter.sh/do-not-disrupt annotation: {why}, ignoring annotation"


def title(reason: str) -> str:
    """Go's cases.Title(language.Und, cases.NoLower): each word's first letter upper-cased, the rest kept."""
    return " ".join(w[:1].upper() + w[1:] for w in reason.split(" "))


def has_buffer_pods(node: str) -> str:
    """Emptiness skips a node a CapacityBuffer's virtual pods are placed on (Karpenter v1.14 emptiness.go)."""
    return f'Node "{node}" has buffer pods'


def buffer_headroom(buffer: str, node: str) -> str:
    """A consolidation is refused: it would remove the room CapacityBuffer `buffer` keeps on `node`."""
    return f"CapacityBuffer {buffer} would lose the headroom it keeps on node {node}"


def consolidation_disabled(pool: str) -> str:
    return f'NodePool "{pool}" has consolidation disabled'


def budget_blocks_reason(reason: str) -> str:
    return f"No allowed disruptions for disruption reason {reason} due to blocking budget"


def launching(reason: str) -> str:
    return f"Launching NodeClaim: {title(reason)}"


WAITING_READINESS = "Waiting on readiness to continue disruption"


def disrupting(kind: str, reason: str) -> str:
    """DisruptionTerminating on the candidate's Node ("Node") and NodeClaim ("NodeClaim")."""
    return f"Disrupting {kind}: {title(reason)}"


def disruption_stopped(method: str, nodes: list[str], why: str) -> str:
    return f"{method} of {', '.join(nodes)} stopped: {why}"


def terminating(reason: str, taint_key: str) -> str:
    return f"Terminating node ({reason or 'Deleted'}): tainted {taint_key}"


def evicted(reason: str) -> str:
    """On the evicted Pod; `reason` is the disruption's (Karpenter: the NodeClaim's DisruptionReason)."""
    return f"Evicted pod: {reason}"


FORCEFUL_TERMINATION = "Forceful Termination"


def eviction_reason(claim: Mapping[str, Any] | None) -> str:
    """What Karpenter's Evicted says (terminator/eviction.go evictionReason): the reason of the NodeClaim's
    DisruptionReason condition when True (a disruption command set it, activities/candidates.py), else
    "Forceful Termination"."""
    for cond in ((claim or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionReason" and cond.get("status") == "True":
            return str(cond.get("reason") or "")
    return FORCEFUL_TERMINATION


def failed_draining(pdb_refused: bool, pod: str, pdb: str | None) -> str:
    """A 429 (a PDB forbids it) or the API server's 500 for a pod under several PDBs (terminator/eviction.go);
    nodeflow adds the PDB it found to Karpenter's key-value list."""
    why = "evicting pod violates a PDB" if pdb_refused else "eviction does not support multiple PDBs"
    return f"Failed to drain node, {why} (Pod={pod}" + (f", PodDisruptionBudget={pdb})" if pdb else ")")


def failed_draining_waiting(pods: int) -> str:
    """A drain round that left pods on the node (termination/controller.go awaitDrain, terminator.go Drain)."""
    return f"Failed to drain node, {pods} pods are waiting to be evicted"


def awaiting_job_completion(pods: list[str], until: datetime | None) -> str:
    """A drain.jobs Wait drain whose first tier is only Job pods left to finish (docs/semantics.md §15.8)."""
    end = f"until {until.strftime('%Y-%m-%dT%H:%M:%SZ')}" if until is not None else "until they finish"
    return f"Leaving {len(pods)} Job pod(s) to finish before draining, {end} ({pretty_slice(sorted(pods), 5)})"


def awaiting_volume_detachment(attachments: list[str]) -> str:
    return f"Awaiting deletion of bound volumeattachments ({pretty_slice(attachments, 5)})"


def grace_period_expiring(termination_time: str) -> str:
    """TerminationGracePeriodExpiring on the Node and the NodeClaim: the annotation's RFC 3339 instant."""
    return f"All pods will be deleted by {termination_time}"


def disrupted(termination_time: datetime | None, grace: int, pod_grace: int, forced: str | None = None) -> str:
    """On a Pod deleted at the node's deadline; `forced`: nodeflow's force-drain, which has no deadline."""
    why = (f"forced: {forced}" if forced
           else f"to accommodate the terminationTime {go_time(termination_time)} of the node")
    return (f"Deleting the pod {why}. The pod was granted {grace} seconds of grace-period of its {pod_grace} "
            "terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation.")


def nominated(node_claim: str | None, node: str | None) -> str:
    """On a pending Pod the provisioner expects on a NodeClaim (new or launching) or an existing Node."""
    info = ([f"nodeclaim/{node_claim}"] if node_claim else []) + ([f"node/{node}"] if node else [])
    return f"Pod should schedule on: {', '.join(info)}"


NO_COMPATIBLE_INSTANCE_TYPES = "NodePool requirements filtered out all compatible available instance types"


def pretty_slice(items: list[str], max_items: int) -> str:
    """Karpenter's pretty.Slice: the first `max_items`, then " and N other(s)"."""
    shown = ", ".join(items[:max_items])
    return shown + (f" and {len(items) - max_items} other(s)" if len(items) > max_items else "")


def go_time(t: datetime | None) -> str:
    """A time as Go's %v prints it (2026-01-01 12:00:00 +0000 UTC); Karpenter formats the deadline so."""
    if t is None:
        return "<nil>"
    offset = t.strftime("%z") or "+0000"
    zone = "UTC" if offset == "+0000" else (t.tzname() or offset)
    return f"{t.strftime('%Y-%m-%d %H:%M:%S')} {offset} {zone}"


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


POD_ERROR_MAX = 400


def pretty_names(names: list[str], most: int = 5) -> str:
    """Karpenter's utils.PrettySlice: the first `most` names, then " and N other(s)"."""
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} other(s)" if len(names) > most else "")


def waiting_on_nodeclaims(names: list[str]) -> str:
    """On an EC2NodeClass being deleted while NodeClaims of it remain (the provider's nodeclass events.go)."""
    return f"Waiting on NodeClaim termination for {pretty_names(names)}"


def pod_insufficient_capacity(node_claim: str, error: str) -> str:
    """On a pod of a launch that found no capacity (v1.15, kubernetes-sigs/karpenter#3143): the NodeClaim meant for it
    and the cloud's answer, so the pod's owner sees why it is still pending without the controller's logs."""
    claim = f"NodeClaim {node_claim}" if node_claim else "The NodeClaim"
    error = error or "insufficient capacity"
    if len(error) > POD_ERROR_MAX:  # every refused offering may be listed; the NodePool's Event has them all
        error = error[:POD_ERROR_MAX - 3] + "..."
    return f"{claim}, nominated for this pod failed to launch: {error}"


def node_repair(condition: str, status: str, since: datetime, toleration: timedelta) -> str:
    return (f"Repairing node: condition {condition} has been {status} since {since.strftime('%Y-%m-%dT%H:%M:%SZ')} "
            f"(tolerated {_duration(toleration)}); terminating it now, its pods go to other or new nodes")


def node_repair_vetoed(node: str) -> str:
    return f"node {node} is unhealthy past its toleration but annotated karpenter.sh/do-not-repair: not repaired"


def node_repair_zone_outage(pool: str, zone: str, unhealthy: int, total: int, percent: int) -> str:
    """Node repair held back in a zone where most nodes turned unhealthy: an outage, not a node fault."""
    return (f"zone {zone} looks like an outage ({unhealthy} of its {total} nodes are unhealthy, more than {percent}%): "
            f"node repair of NodePool {pool} holds back there")


def node_repair_disabled(pool: str, policy: str) -> str:
    """A due node of a pool whose DisruptionPolicy switches repair off (`repair.enabled: false`)."""
    return f"node repair is disabled for NodePool {pool} by DisruptionPolicy {policy} (repair.enabled: false)"


def node_repair_blocked(pool: str, unhealthy: int, total: int, allowed: int, percent: int) -> str:
    """Karpenter's sentence (node/health/controller.go), then nodeflow's counts."""
    return (f"more than {percent}% nodes are unhealthy in the nodepool ({unhealthy} of {total} nodes of NodePool "
            f"{pool} are unhealthy, at most {allowed} may be repaired)")


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


def headroom_launched() -> str:
    """A NodeClaim a provisioning launched for CapacityBuffer headroom alone (its pods are virtual, never named)."""
    return "Launched NodeClaim for CapacityBuffer headroom"


def static_limit_reached(limit: int, nodes: int, replicas: int) -> str:
    """On a static NodePool held below its replicas by limits.nodes (NodePoolLimitsReached)."""
    return f"limits.nodes={limit} reached: {nodes} node(s) of {replicas} replicas, no more are launched"


# StaticDrift (planning/disruption/static_drift.py): Karpenter's message when the replacement would exceed limits.nodes.
STATIC_DRIFT_AT_LIMIT = "static NodePool is at its node limit and cannot stage a replacement"


def terminate_first(limit: int, replicas: int) -> str:
    """Why a static NodePool's drift deletes before it replaces (v1.15, kubernetes-sigs/karpenter#3312): no
    replacement fits under limits.nodes, so the node goes and the pool's scale-up re-creates it."""
    if limit >= replicas:
        return f"terminate-first: pool at its replicas (limits.nodes {limit})"
    return f"terminate-first: pool held at its node limit (limits.nodes {limit}, {replicas} replicas)"


def drift_backoff(pool: str, failures: int, until: str) -> str:
    """A pool whose drift replacements failed: its drift is held (kubernetes-sigs/karpenter#3080)."""
    return f"drift of nodepool {pool} backs off until {until} after {failures} failed replacement(s)"


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


def consolidation_approved(score: float, threshold: float, savings_percent: float, disruption_percent: float) -> str:
    """A Balanced pool approved a consolidation move, in the words of the Balanced design that
    kubernetes-sigs/karpenter#2962 implements; Go's `%.2f` renders an infinite score (nothing disrupted) `+Inf`."""
    shown = "+Inf" if math.isinf(score) else f"{score:.2f}"
    return (f"score {shown} >= threshold {threshold:.2f} "
            f"(savings {savings_percent:.1f}%, disruption {disruption_percent:.1f}%)")


WITHOUT_REPLACEMENT = "without the planned replacement: at validation their pods fit on the other nodes"


def without_replacement(method: str, nodes: list[str], savings_per_hour: float) -> str:
    """ConsolidationWithoutReplacement: the command, its nodes (the first three) and what the delete saves."""
    shown = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
    return f"{method} deletes {shown} {WITHOUT_REPLACEMENT} (saves ${savings_per_hour:.4f}/h)"


def volume_limit_reached(pod: str, node: str, driver: str, used: int, limit: int, need: int) -> str:
    """A node the simulation refused a pod for its volume attachment limit (Karpenter v1.15 instance-type volume
    limits, kubernetes-sigs/karpenter#3202; kube's NodeVolumeLimits): the detail nodeflow adds to Karpenter's
    message when that is why a move needs a new node or a pod fits nowhere."""
    left = max(limit - used, 0)
    if left == 0:
        return f"pod {pod}: node {node} has no volume attachment left for driver {driver} ({used} of {limit})"
    return (f"pod {pod}: node {node} has {left} volume attachment(s) left for driver {driver} ({used} of {limit}) "
            f"and the pod needs {need}")


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
    """A node whose disruption an operator cancelled, held from re-planning (planning/disruption/candidates.py)."""
    return f"disruption cancelled by operator at {cancelled_at}, held until {held_until} (nodeflow resume {node})"
