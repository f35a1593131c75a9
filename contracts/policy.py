"""Workflow payloads of the DisruptionPolicy controls that run inside workflows (docs/semantics.md §15): drift
waves (DriftRolloutWorkflow) and the activities behind the hook, notifications and escalation (DisruptionWorkflow;
the controls it carries in its input are in contracts/policy_controls.py). Plain seconds, not Go durations, so
inputs stay decodable whatever the resource's shape grows into; `waves_of` converts once, in the planner's activity.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.disruption_policy import DriftPolicy
from contracts.disruption import DisruptionCommand, DisruptionSettings
from contracts.policy_controls import RolloutStart, WavesSpec, _seconds


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=False)


def waves_of(policy: Any) -> WavesSpec | None:
    """The drift waves of a DisruptionPolicy; None when it does not roll drift out in waves."""
    drift = policy.spec.drift if policy is not None else None
    if drift is None or not drift.waves:
        return None
    return WavesSpec(waves=list(drift.waves), bake_seconds=_seconds(drift.bake, 0.0),
                     max_failed_replacements=drift.max_failed_replacements if drift.max_failed_replacements
                     is not None else 1, health_timeout_seconds=_seconds(drift.health, 600.0))


def wave_targets(waves: list[int | str], drifted: int) -> list[int]:
    """Cumulative node counts after each wave: the resource's own rule (api/disruption_policy.py)."""
    return DriftPolicy(waves=waves).wave_targets(drifted)


# ---- drift rollout ------------------------------------------------------------------------------------------

class RolloutInput(_Model):
    start: RolloutStart
    settings: DisruptionSettings = Field(default_factory=DisruptionSettings)


class RolloutPhase(StrEnum):
    """Where a rollout is; values are shown by `nodeflow rollout status` and never change."""

    STARTING = "Starting"
    ROLLING = "Rolling"
    CHECKING_HEALTH = "CheckingHealth"
    BAKING = "Baking"
    HALTED = "Halted"
    SUCCEEDED = "Succeeded"
    ABORTED = "Aborted"


class HaltCause(StrEnum):
    FAILED_REPLACEMENTS = "FailedReplacements"
    UNHEALTHY_WORKLOADS = "UnhealthyWorkloads"


class WorkloadRef(_Model):
    """The owner of a displaced pod (ReplicaSet, StatefulSet, ...), or the pod itself when it has none."""

    namespace: str
    kind: str
    name: str
    uid: str = ""


class RolloutPlanInput(_Model):
    node_pool: str
    limit: int
    at: datetime
    catalog_path: str | None = None


class RolloutNoteInput(_Model):
    """The NodePool's `nodeflow.dev/rollout` annotation to write (api/rollout_state.py); None removes it."""

    node_pool: str
    value: str | None = None


class RolloutPlan(_Model):
    """The pool's drifted nodes now (not being disrupted already) and the drift commands a pass would start."""

    drifted: int = 0
    commands: list[DisruptionCommand] = Field(default_factory=list)
    workloads: list[WorkloadRef] = Field(default_factory=list)  # owners of the pods on the commands' nodes


class WorkloadsInput(_Model):
    workloads: list[WorkloadRef]


class RolloutStatus(_Model):
    node_pool: str
    generation: str
    phase: RolloutPhase
    wave: int = 0  # 1-based; 0 before the first
    waves: int = 0
    targets: list[int] = Field(default_factory=list)  # cumulative node counts after each wave
    disrupted: int = 0
    failed_replacements: int = 0
    bake_until: datetime | None = None
    halted: HaltCause | None = None
    halt_reason: str = ""
    halts: int = 0  # how many times it halted; the note carries it so a reader tells a new halt from a resumed one
    disruptions: list[str] = Field(default_factory=list)  # DisruptionWorkflow ids started, in order
    message: str = ""


class RolloutResult(_Model):
    phase: RolloutPhase
    disrupted: int = 0
    message: str = ""


# ---- hooks and escalation -----------------------------------------------------------------------------------

class HookCall(_Model):
    """The pre-disruption hook's request body is built from this in the activity (pods are read there)."""

    url: str
    node: str
    pool: str
    reason: str
    deadline: datetime | None = None
    workflow_id: str = ""


class NotifyKind(StrEnum):
    STARTED = "started"
    FINISHED = "finished"
    FAILED = "failed"
    BLOCKED = "blocked"
    FORCED = "forced"


class Notification(_Model):
    url: str
    kind: NotifyKind
    nodes: list[str]
    pool: str
    reason: str
    message: str = ""
    workflow_id: str = ""
    policy: str = ""


class WatchInput(_Model):
    """Wait up to `return_after_seconds` for the terminations to end; answer those still running."""

    workflow_ids: list[str]
    return_after_seconds: float
    poll_seconds: float = 1.0


class TerminationBlocker(_Model):
    """A termination still draining: its node, the pods left and the PDBs refusing their eviction."""

    workflow_id: str
    node: str = ""
    pods: int = 0
    pdbs: list[str] = Field(default_factory=list)
    do_not_disrupt: int = 0

    def describe(self) -> str:
        parts = [f"{self.node or self.workflow_id}: {self.pods} pod(s) left"]
        if self.pdbs:
            parts.append("PDB " + ", ".join(self.pdbs))
        if self.do_not_disrupt:
            parts.append(f"{self.do_not_disrupt} do-not-disrupt")
        return "; ".join(parts)
