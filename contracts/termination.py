"""Pydantic I/O models of the termination workflow and its activities.

Shared by the workflow (deterministic), the activities (side effects), the starters and the CLI, so they
live apart from all three. One model per workflow/activity/update parameter, so fields can be added later
with defaults without breaking recorded histories.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, Field

from planning.lifecycle.drain import Tier


class TerminationPhase(StrEnum):
    """Where a termination (of one node) is; the values are the `NodeflowPhase` search attribute. Everything
    from TERMINATING_INSTANCE on is past the point of no return."""

    PENDING = "Pending"
    DRAINING = "Draining"
    AWAITING_VOLUMES = "AwaitingVolumeDetachment"
    TERMINATING_INSTANCE = "TerminatingInstance"
    FINALIZING = "Finalizing"
    TERMINATED = "Terminated"
    CANCELLED = "Cancelled"


POINT_OF_NO_RETURN = (TerminationPhase.TERMINATING_INSTANCE, TerminationPhase.FINALIZING, TerminationPhase.TERMINATED)


class CompletionWait(BaseModel):
    """A DisruptionPolicy's `drain: {jobs: Wait}` for one voluntary disruption (docs/semantics.md §15.8): Job pods
    and pods annotated nodeflow.dev/wait-for-completion are left to finish for up to `max_wait` (None: until the
    grace-period deadline, or until they finish when there is none)."""

    max_wait: timedelta | None = None
    policy: str = ""  # the DisruptionPolicy's name, for the progress and the Web UI


class TerminationInput(BaseModel):
    """What a starter (watcher, disruption, interruption) knows about the node to terminate."""

    node_name: str
    node_uid: str
    node_claim_name: str | None = None
    node_pool: str | None = None
    provider_id: str | None = None
    reason: str = "Deleted"
    deadline: AwareDatetime | None = None  # absolute override, e.g. a spot interruption's time
    grace_period: timedelta | None = None  # NodeClaim terminationGracePeriod; deadline = deletion time + grace
    requested_by: str = ""  # "watcher" when a user/cascade deleted the object; else the starting workflow
    completion_wait: CompletionWait | None = None  # drain.jobs Wait of the pool's policy (voluntary disruptions only)


class DeadlineRequest(BaseModel):
    """A hard deadline from outside (a spot interruption: warning + 2 min); it only ever moves earlier."""

    deadline: AwareDatetime
    reason: str = ""


class ForceRequest(BaseModel):
    reason: str = ""


class CancelRequest(BaseModel):
    reason: str = ""


class PodState(BaseModel):
    """One pod that still keeps the node from draining."""

    namespace: str
    name: str
    uid: str = ""
    tier: Tier = Tier.PLAIN
    grace_seconds: int = 30  # spec.terminationGracePeriodSeconds (API default 30)
    status: str = "Waiting"  # Waiting | Evicting | Terminating | Blocked | DoNotDisrupt | WaitingForCompletion
    blocking_pdb: str | None = None  # "namespace/name" of the PDB that refused the eviction
    attempts: int = 0
    started_at: AwareDatetime | None = None  # status.startTime (how long a Job pod has been running)
    runs_to_completion: bool = False  # a Job's pod or annotated nodeflow.dev/wait-for-completion

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class TerminationProgress(BaseModel):
    """Answer of the `progress` query: what the operator needs to see why a node is not gone yet."""

    node_name: str
    node_pool: str | None = None
    reason: str = ""
    phase: TerminationPhase = TerminationPhase.PENDING
    started_at: AwareDatetime | None = None
    deadline: AwareDatetime | None = None
    pods: list[PodState] = Field(default_factory=list)
    blocking_pdbs: list[str] = Field(default_factory=list)
    forced: str | None = None  # the force reason once forced
    cancelled: str | None = None  # the cancel reason once cancelled
    user_deleting: bool = False  # the Node/NodeClaim has a deletionTimestamp: cancel is impossible
    message: str = ""
    blocking: list[str] = Field(default_factory=list)  # blocking_of(pods): PDBs and do-not-disrupt pods
    unknown_signals: list[str] = Field(default_factory=list)  # latest signal names no handler has (ignored)
    # drain.jobs Wait: run-to-completion pods are left alone until this instant (None: no hold, or an unbounded one)
    completion_until: AwareDatetime | None = None
    waiting: str | None = None  # completion_summary(): "waiting for 2 Job pods, longest running 14m"


WAITING_FOR_COMPLETION = "WaitingForCompletion"  # PodState.status of a pod a `jobs: Wait` drain leaves to finish


def completion_summary(pods: list[PodState], now: datetime, until: datetime | None = None) -> str | None:
    """What a `jobs: Wait` drain waits for, as `nodeflow status` and the Web UI say it; None when nothing."""
    held = [p for p in pods if p.status == WAITING_FOR_COMPLETION]
    if not held:
        return None
    noun = "Job pod" if len(held) == 1 else "Job pods"
    text = f"waiting for {len(held)} {noun}"
    starts = [p.started_at for p in held if p.started_at is not None]
    if starts:
        text += f", longest running {_span(now - min(starts))}"
    if until is not None:
        text += f", until {until.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    return text


def _span(delta: timedelta) -> str:
    secs = max(int(delta.total_seconds()), 0)
    if secs < 120:
        return f"{secs}s"
    if secs < 7200:
        return f"{secs // 60}m"
    return f"{secs // 3600}h{(secs % 3600) // 60}m"


DO_NOT_DISRUPT_BLOCK = "do-not-disrupt: "


def blocking_of(pods: list[PodState]) -> list[str]:
    """What keeps the drain waiting, for `progress` and `nodeflow status`: the PDBs that refused an eviction
    ("ns/name"), then each pod whose do-not-disrupt annotation holds it ("do-not-disrupt: ns/pod")."""
    pdbs = sorted({p.blocking_pdb for p in pods if p.blocking_pdb})
    pinned = sorted(DO_NOT_DISRUPT_BLOCK + p.key for p in pods if p.status == "DoNotDisrupt")
    return pdbs + pinned


class TerminationResult(BaseModel):
    node_name: str
    phase: TerminationPhase
    instance_terminated: bool = False
    pods_evicted: int = 0
    pods_deleted: int = 0
    message: str = ""


class ControlResult(BaseModel):
    """What an accepted force/cancel update returns to its caller."""

    accepted: bool = True
    phase: TerminationPhase
    message: str = ""


# ---- activity I/O ----


class PrepareInput(BaseModel):
    node_name: str
    node_claim_name: str | None = None
    provider_id: str | None = None
    reason: str = ""
    cascade: bool = True  # mirror a user's deletion onto the Node/NodeClaim counterpart
    # write the NodeClaim's termination markers (Drained=Unknown) too, when the node is there and not NotReady: the
    # claim was just read, so this saves the workflow a local activity and the API two reads (`claim_marked`)
    mark_claim: bool = False
    started_at: AwareDatetime | None = None  # the termination's start: the markers' `since` without a deletion


class PrepareResult(BaseModel):
    node_exists: bool
    node_claim_name: str | None = None
    node_claim_exists: bool = False
    provider_id: str | None = None
    node_pool: str | None = None
    deleting_since: AwareDatetime | None = None  # earliest deletionTimestamp of the Node / NodeClaim
    grace_period: timedelta | None = None  # NodeClaim spec.terminationGracePeriod
    termination_timestamp: AwareDatetime | None = None  # NodeClaim annotation, when present
    pods: list[PodState] = Field(default_factory=list)
    volume_attachments: int | None = None  # attachments to the node after tainting (None: not looked at)
    node_ready: bool | None = None  # the Node's Ready condition is True (None: not looked at)
    # the worker's --min-drain-time (a test knob, docs/configuration.md); None: Karpenter's MinDrainTime, 5 s
    min_drain_time: timedelta | None = None
    claim_marked: bool = False  # the markers were written as `mark_claim` asked (else the workflow writes them)


class DrainInput(BaseModel):
    node_name: str
    reason: str = ""
    return_by: AwareDatetime | None = None  # give control back to the workflow at this wall-clock instant
    deadline: AwareDatetime | None = None
    workflow_id: str | None = None  # where to signal blocking changes (progress query)
    started_at: AwareDatetime | None = None  # when the termination began (drain duration metric)
    node_pool: str | None = None  # the node's pool for karpenter_nodes_drained_total (None: read from the Node)
    node_claim_name: str | None = None  # its NodeClaim, read for the Evicted events' reason (None: found by a LIST)
    # Karpenter's MinDrainTime in the activity (docs/semantics.md §9.5): drained sooner, it waits until then and looks
    # again (a pod bound before kube-scheduler saw the taint is evicted too); None: the workflow holds it (a timer)
    drained_not_before: AwareDatetime | None = None
    wait_for_completion: bool = False  # drain.jobs Wait in force now: leave run-to-completion pods to finish
    completion_until: AwareDatetime | None = None  # ... until then (for the AwaitingJobCompletion Event)
    # Karpenter v1.15 (kubernetes-sigs/karpenter#3063): the drain's rounds delete the pods due at the deadline, from
    # any tier; False (executions before it): the workflow's timers call termination.delete_pods instead
    deadline_deletes: bool = False


class DrainResult(BaseModel):
    drained: bool
    node_exists: bool = True
    evicted: int = 0
    deleted: int = 0  # pods deleted at the deadline by this drain (`deadline_deletes`)
    pods: list[PodState] = Field(default_factory=list)


class DeletePodsInput(BaseModel):
    """Delete pods bypassing PDBs: at the deadline formula (`force=False`) or all now (`force=True`)."""

    node_name: str
    at: AwareDatetime  # workflow time of the decision (virtual under time skipping)
    deadline: AwareDatetime | None = None
    force: bool = False
    reason: str = ""


class DeletePodsResult(BaseModel):
    deleted: list[str] = Field(default_factory=list)  # "namespace/name (grace Ns)"


class VolumesInput(BaseModel):
    node_name: str
    deadline: AwareDatetime | None = None
    node_claim_name: str | None = None  # its VolumesDetached condition is written (older runs: None, not written)


class VolumesResult(BaseModel):
    detached: bool
    pending: list[str] = Field(default_factory=list)


class InstanceInput(BaseModel):
    provider_id: str
    node_name: str = ""
    node_claim_name: str | None = None  # terminate_instance marks it InstanceTerminating (older runs: None)


class InstanceResult(BaseModel):
    instance_id: str | None = None
    state: str = "unknown"  # shutting-down | terminated | gone
    terminate_called: bool = False


class FinalizeInput(BaseModel):
    node_name: str
    node_claim_name: str | None = None
    reason: str = ""
    delete_objects: bool = True  # DELETE Node/NodeClaim first when no one did (disruption-started runs)
    # when the node's deletion was asked for (or the termination began): Karpenter's termination duration metric
    started_at: AwareDatetime | None = None


class FinalizeResult(BaseModel):
    node_finalizer_removed: bool = False
    node_claim_finalizer_removed: bool = False


class UntaintInput(BaseModel):
    node_name: str
    reason: str = ""
    # an operator's cancel at this time: the node is also held from re-planning for the worker's cool-down
    cancelled_at: AwareDatetime | None = None


class DrainSignal(BaseModel):
    """Sent by the drain activity when which pods block (and by which PDB) changes."""

    pods: list[PodState] = Field(default_factory=list)


class DrainedStatus(StrEnum):
    """The `status` of a NodeClaim's `Drained` condition as Karpenter's termination controller sets it."""

    DRAINING = "Unknown"  # reason "Draining"
    DRAINED = "True"


class TerminationMarkersInput(BaseModel):
    """Mark a terminating NodeClaim: the termination-timestamp annotation (deletion time, else `since`, plus
    its terminationGracePeriod; set once) and its `Drained` condition."""

    node_claim_name: str
    drained: DrainedStatus | None = None  # None: the annotation only (no drain runs)
    since: AwareDatetime | None = None
