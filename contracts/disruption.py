"""Inputs, outputs and progress of the planner and disruption workflows (small, so histories stay small).

Shared by workflows/ and activities/: plain pydantic models, no I/O, safe to pass through the sandbox.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from contracts.policy_controls import DrainSpec, PolicyControls, RolloutStart
from planning.disruption.method_names import UNVALIDATED_METHODS


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=False)


class NodeRef(_Model):
    """One node as the workflows need it: enough to taint it, name its workflow and terminate it."""

    name: str
    uid: str
    node_claim: str | None = None
    provider_id: str | None = None
    node_pool: str | None = None


class Replacement(_Model):
    """A node to launch before the candidates go: the allowed instance types, cheapest first.

    The serialisable form of `planning.disruption.commands.Replacement` in workflow payloads. It stays a class of its
    own: the Temporal pydantic converter (`pydantic_core.to_json`) always writes aliases, so planning's model
    (camelCase aliases for the public `nodeflow plan` JSON) would write `instanceTypes` where recorded
    histories and workers of the previous release read `instance_types`.
    """

    instance_types: list[str]
    capacity_type: str = "on-demand"
    price: float = 0.0
    zone: str | None = None
    requirements: list[dict] = Field(default_factory=list)


class DisruptionCommand(_Model):
    """One command of a planner pass in workflow payloads: `planning.disruption.commands.Command` with its nodes
    resolved to NodeRefs (uid, NodeClaim, providerID) and its simulated pod moves reduced to a count and, per
    destination, the pods (`placements`). Planning's model keeps names and parallel lists for the public plan JSON
    (camelCase); see `Replacement` for why the two cannot be one class. Converted once, in activities/planning_runner.py
    `to_command`."""

    method: str
    reason: str
    node_pool: str
    nodes: list[NodeRef]
    replacements: list[Replacement] = Field(default_factory=list)
    savings_per_hour: float = 0.0
    pods: int = 0
    # Where the plan put the candidates' pods: node name -> pod keys ("" for the command's replacements). Later
    # passes and validations reserve them there while the command is in flight (planning/scheduling/simulation.py
    # Scheduler).
    placements: dict[str, list[str]] = Field(default_factory=dict)

    @property
    def workflow_id(self) -> str:
        return f"disrupt-{self.nodes[0].uid}"

    @property
    def decision(self) -> str:
        return "replace" if self.replacements else "delete"


# Karpenter validates consolidation and emptiness commands after 15 s, never drift or repair ones (docs/semantics.md
# §4): node repair as a method since v1.15 (kubernetes-sigs/karpenter#3311) replaces an unhealthy node now.
def validated(method: str) -> bool:
    """Whether a command of this method is validated before it is tainted (and counted as a decision only then)."""
    return method not in UNVALIDATED_METHODS


class DisruptionSettings(_Model):
    """Timing knobs of a disruption; tests shrink them, production keeps Karpenter's values."""

    validation_delay_seconds: float = 15.0
    ready_timeout_seconds: float = 600.0
    ready_poll_seconds: float = 5.0
    termination_timeout_seconds: float = 24 * 3600.0
    termination_poll_seconds: float = 2.0
    catalog_path: str | None = None
    # a cancelled disruption's nodes are held from re-planning this long (0: not held; docs/configuration.md)
    cancel_hold_seconds: float = Field(default=1800.0, ge=0)


class PlannerInput(_Model):
    settings: DisruptionSettings = Field(default_factory=DisruptionSettings)
    replan_limit: int = Field(default=5, ge=0)  # passes planned again at once after a command (workflows/planner.py)
    consolidation_replans: int = Field(default=2, ge=0)  # of those, the most that follow consolidation commands


class PlanPassInput(_Model):
    at: datetime
    catalog_path: str | None = None
    exclude_uids: list[str] = Field(default_factory=list)  # nodes of commands this run started (not yet visible)
    placements: dict[str, list[str]] = Field(default_factory=dict)  # their DisruptionCommand.placements, merged


class BlockedNode(_Model):
    node: str
    reason: str


class PassSkipped(StrEnum):
    """Why a planner pass decided nothing: the worker's cluster cache could not be trusted (runtime/cluster_cache.py
    Reason, same values). Recorded in histories: values never change."""

    NOT_SYNCED = "NotSynced"
    RELISTING = "Relisting"
    WATCH_BROKEN = "WatchBroken"
    STOPPED = "Stopped"


STATIC_PROVISIONING_PREFIX = "provision-static-"


class StaticScaleUp(_Model):
    """NodeClaims a static NodePool launches from its template (planning/provisioning/static_capacity.py), by one
    ProvisioningWorkflow per pool at a time: its id is the pool's, so a second pass while it runs starts nothing."""

    node_pool: str
    count: int
    replacement: Replacement
    node_pool_uid: str = ""  # in the id: another cluster's same-named pool (one Temporal namespace) never collides

    @property
    def workflow_id(self) -> str:
        suffix = f"-{self.node_pool_uid}" if self.node_pool_uid else ""
        return f"{STATIC_PROVISIONING_PREFIX}{self.node_pool}{suffix}"


class PlanPassResult(_Model):
    """What the planner workflow acts on; the snapshot itself stays in the activity."""

    commands: list[DisruptionCommand] = Field(default_factory=list)
    expirations: list[NodeRef] = Field(default_factory=list)
    repairs: list[NodeRef] = Field(default_factory=list)  # unhealthy past their toleration: terminate now
    repairs_blocked: list[str] = Field(default_factory=list)  # NodePools the 20% safety valve holds back
    static_scale_ups: list[StaticScaleUp] = Field(default_factory=list)  # static NodePools below their replicas
    static_removals: list[NodeRef] = Field(default_factory=list)  # static NodePools above them: terminate these
    blocked: list[BlockedNode] = Field(default_factory=list)
    paused_node_pools: list[str] = Field(default_factory=list)
    excluded_nodes: list[str] = Field(default_factory=list)
    released: list[str] = Field(default_factory=list)  # leftover disrupted taints removed this pass
    nodes: int = 0
    skipped: PassSkipped | None = None  # set when the pass planned nothing because its cluster view was stale
    skipped_detail: str = ""  # the kind concerned and its last error
    policies: dict[str, PolicyControls] = Field(default_factory=dict)  # pool -> its disruptions' hooks, escalation
    rollouts: list[RolloutStart] = Field(default_factory=list)  # pools whose drift goes in waves (DriftRolloutWorkflow)


class PlannerResult(_Model):
    started: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    terminations: list[str] = Field(default_factory=list)
    repairs: list[str] = Field(default_factory=list)  # TerminationWorkflow ids of the nodes repaired
    repairs_blocked: list[str] = Field(default_factory=list)
    static_provisioning: list[str] = Field(default_factory=list)  # ProvisioningWorkflow ids of static scale-ups
    static_terminations: list[str] = Field(default_factory=list)  # TerminationWorkflow ids of static scale-downs
    rollouts: list[str] = Field(default_factory=list)  # DriftRolloutWorkflow ids started by this pass
    blocked: int = 0
    paused_node_pools: list[str] = Field(default_factory=list)
    replans: int = 0  # passes planned again at once after a command


class ValidateInput(_Model):
    command: DisruptionCommand
    at: datetime
    own_workflow_id: str
    catalog_path: str | None = None


class ValidationResult(_Model):
    valid: bool
    reason: str = ""
    # Valid, but to be carried out as this command instead: the same candidates deleted without the planned
    # replacement, whose pods now fit on the other nodes (planning/disruption/validation.py REPLACEMENT_NOT_NEEDED).
    command: DisruptionCommand | None = None


class CancelHold(_Model):
    """Written on a cancelled disruption's nodes when they are untainted; the planner skips them until
    `held_until` (planning/disruption/candidates.py), `nodeflow resume NODE` removes it."""

    cancelled_at: datetime
    held_until: datetime


class TaintInput(_Model):
    nodes: list[NodeRef]
    reason: str
    hold: CancelHold | None = None  # untaint only: also mark the nodes held


class DriftOutcomeInput(_Model):
    """A drift command's replacement failed (`failed`) or became Ready: the pool's drift back-off is advanced or
    cleared (planning/policies/drift_backoff.py). `at`: the workflow's time, so a retry writes the same."""

    node_pool: str
    failed: bool
    at: datetime


class LaunchInput(_Model):
    """`key` is stable across retries (workflow id + index), so the NodeClaim name is too."""

    key: str
    node_pool: str
    replacement: Replacement
    reason: str


class LaunchedReplacement(_Model):
    node_claim: str
    uid: str
    instance_id: str | None = None
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    price: float | None = None


class StatusInput(_Model):
    """Check the replacements; the activity keeps checking for up to `wait_seconds` until all are Ready."""

    replacements: list[LaunchedReplacement]
    wait_seconds: float = 0.0


class ReplacementStatus(_Model):
    node_claim: str
    node: str | None = None
    ready: bool = False
    gone: bool = False


class TerminationsInput(_Model):
    nodes: list[NodeRef]
    reason: str
    task_queue: str
    requested_by: str = ""
    deadline: datetime | None = None  # a forceful termination's grace-period deadline (node repair: now)
    drain: DrainSpec | None = None  # the pool policy's drain.jobs Wait (voluntary disruptions only, §15.8)


class AwaitTerminationsInput(_Model):
    workflow_ids: list[str]
    poll_seconds: float = 1.0


class EventSpec(_Model):
    """A Kubernetes Event to record on a Node, NodeClaim, NodePool or Pod (api/events.py says how each reason is
    typed and deduplicated)."""

    kind: str  # Node | NodePool | NodeClaim | Pod
    name: str
    reason: str
    message: str
    type: str = "Normal"
    uid: str | None = None
    namespace: str | None = None  # a Pod's; cluster-scoped objects' Events go to "default"


class EventsInput(_Model):
    events: list[EventSpec] = Field(default_factory=list)
    outcome: str | None = None
    reason: str | None = None


class DisruptionPhase(StrEnum):
    """Where a disruption (one planner command) is; the values are the `NodeflowPhase` search attribute."""

    PENDING = "Pending"
    VALIDATING = "Validating"
    TAINTING = "Tainting"
    LAUNCHING = "Launching"
    WAITING_READY = "WaitingReady"
    ROLLING_BACK = "RollingBack"
    TERMINATING = "Terminating"
    SUCCEEDED = "Succeeded"
    ROLLED_BACK = "RolledBack"
    INVALID = "Invalid"
    CANCELLED = "Cancelled"
    FAILED = "Failed"  # a candidate's termination failed after the point of no return
    ABANDONED = "Abandoned"  # a required pre-disruption ack never came and the policy says abandon


TERMINAL_PHASES = frozenset({DisruptionPhase.SUCCEEDED, DisruptionPhase.ROLLED_BACK, DisruptionPhase.INVALID,
                             DisruptionPhase.CANCELLED, DisruptionPhase.FAILED, DisruptionPhase.ABANDONED})
# From here on the candidates are being deleted: a cancel can no longer undo the command.
NO_RETURN_PHASES = frozenset({DisruptionPhase.TERMINATING}) | TERMINAL_PHASES


class DisruptionInput(_Model):
    command: DisruptionCommand
    settings: DisruptionSettings = Field(default_factory=DisruptionSettings)
    policy: PolicyControls | None = None  # the pool's DisruptionPolicy hooks and escalation (None: none apply)


class DisruptionProgress(_Model):
    phase: DisruptionPhase
    method: str
    reason: str
    node_pool: str
    nodes: list[str]
    replacements: list[LaunchedReplacement] = Field(default_factory=list)
    ready: list[str] = Field(default_factory=list)
    ready_deadline: datetime | None = None
    cancel_requested: bool = False
    error: str | None = None
    unknown_signals: list[str] = Field(default_factory=list)  # latest signal names no handler has (ignored)
    # how the command being carried out differs from the one planned (validation dropped its replacement)
    note: str | None = None


class DisruptionResult(_Model):
    outcome: DisruptionPhase
    message: str = ""
    rollback_cause: str | None = None  # RolledBack/Cancelled: disruption.RollbackCause's value (e.g. NotReady)
    replacements: list[LaunchedReplacement] = Field(default_factory=list)
    terminations: list[str] = Field(default_factory=list)
