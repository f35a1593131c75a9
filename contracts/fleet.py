"""Payloads of FleetRolloutWorkflow and its activities (docs/fleet.md).

The status is what `nodeflow fleet rollout status` shows: per stage, cluster and pool, where each is, the bake
deadline, and why the fleet halted. Values of the phase enums are shown to users and never change.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.fleet import FleetRollout
from api.fleet_observation import ClusterObservation
from api.rollout_state import RolloutNote

FLEET_TASK_QUEUE = "nodeflow-fleet"  # where FleetRolloutWorkflows run (any worker started with --fleet)
MEMO_TARGETS = "fleetTargets"  # ["cluster/pool", ...]: how a second rollout over the same pools is found


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class FleetSettings(_Model):
    """Timing knobs; tests shrink them."""

    poll_seconds: float = 15.0  # between two observations of a rolling cluster
    unreachable_retry_seconds: float = 30.0  # between two attempts on a cluster whose worker did not answer
    gate_seconds: float = 30.0  # between two gate checks during a bake
    # A run continues as new once its history reaches this many events, or when Temporal suggests it, well before
    # Temporal's warning at 10Ki events and its 50Ki limit (docs/fleet.md §8).
    continue_as_new_events: int = Field(default=5000, ge=10)  # 10: a run still makes one step (tests)
    # After a resume, a pool drift rollout's note may still show the halt just resumed until its busy cluster worker
    # rewrites it; for this long that very note means "resuming", after it a halt again (docs/fleet.md §5).
    resume_grace_seconds: float = Field(default=120.0, ge=0)


class FleetPhase(StrEnum):
    RUNNING = "Running"
    BAKING = "Baking"
    PAUSED = "Paused"
    HALTED = "Halted"
    SUCCEEDED = "Succeeded"
    ABORTED = "Aborted"


class ClusterPhase(StrEnum):
    PENDING = "Pending"
    APPLYING = "Applying"
    ROLLING = "Rolling"
    DONE = "Done"
    FAILED = "Failed"  # halts the fleet (onFailure Halt) until resumed
    SKIPPED = "Skipped"  # failed with onFailure Skip: left where it is
    UNREACHABLE = "Unreachable"  # its worker did not answer: blocks the stage, never skipped


class PoolStatus(_Model):
    name: str
    nodes: int = 0
    updated: int = 0
    drifted: int = 0
    wave: int = 0
    waves: int = 0
    rollout_phase: str = ""
    bake_until: datetime | None = None
    halt_reason: str = ""


class ClusterStatus(_Model):
    name: str
    task_queue: str
    phase: ClusterPhase = ClusterPhase.PENDING
    message: str = ""
    applied_at: datetime | None = None
    done_at: datetime | None = None
    pools: list[PoolStatus] = Field(default_factory=list)


class StageStatus(_Model):
    name: str
    phase: str = "Pending"  # Pending, Rolling, Baking, Done
    bake_until: datetime | None = None
    started_at: datetime | None = None
    done_at: datetime | None = None
    clusters: list[ClusterStatus] = Field(default_factory=list)


class FleetStatus(_Model):
    id: str
    name: str = ""
    phase: FleetPhase = FleetPhase.RUNNING
    stage: int = 0  # 1-based index of the current stage; 0 before the first
    halted_reason: str = ""
    paused_reason: str = ""
    stages: list[StageStatus] = Field(default_factory=list)
    log: list[str] = Field(default_factory=list)  # the last steps, newest last (bounded)
    runs: int = 1  # Temporal runs of the rollout so far (each continue-as-new starts one)


class PoolHalts(_Model):
    """A cluster's halted pool drift rollouts as the fleet saw them (per pool, its note), and, once the fleet resumed
    them, until when that same note still counts as "resuming" rather than a new halt."""

    notes: dict[str, RolloutNote] = Field(default_factory=dict)
    resumed_until: datetime | None = None


class FleetCarry(_Model):
    """What one run hands the next when it continues as new: the status (stage, per cluster its phase, applied and
    done times, bake deadlines) and what is not in it. Keys of `halted_at` are cluster names or `bake:<stage>`."""

    status: FleetStatus
    halts: list[str] = Field(default_factory=list)
    paused: str | None = None
    resumes: int = 0
    halted_at: dict[str, int] = Field(default_factory=dict)  # who waits for a resume, and the resume count then
    deadlines: dict[str, datetime | None] = Field(default_factory=dict)  # per cluster: its stage's timeout
    pool_rollouts: dict[str, list[str]] = Field(default_factory=dict)  # per halted cluster: drift rollouts to resume
    pool_halts: dict[str, PoolHalts] = Field(default_factory=dict)  # per cluster: its pools' halts, resumed or not


class FleetInput(_Model):
    rollout: FleetRollout
    settings: FleetSettings = Field(default_factory=FleetSettings)
    carry: FleetCarry | None = None  # set by continue-as-new only


class ApplyInput(_Model):
    rollout_id: str
    stage: str
    cluster: str
    change: dict[str, Any]  # FleetChange as JSON (by alias)
    node_pools: list[str]


class ApplyResult(_Model):
    changed: list[str] = Field(default_factory=list)  # kind/name written now
    unchanged: list[str] = Field(default_factory=list)  # kind/name already carrying this rollout's change


class ObserveInput(_Model):
    rollout_id: str
    cluster: str
    change: dict[str, Any]
    node_pools: list[str]


class GateInput(_Model):
    url: str
    query: str


class GateResult(_Model):
    ok: bool
    message: str


def pool_statuses(obs: ClusterObservation) -> list[PoolStatus]:
    """The status rows of an observation's pools."""
    out = []
    for p in obs.pools:
        note = p.rollout
        out.append(PoolStatus(name=p.name, nodes=p.nodes, updated=p.updated, drifted=p.drifted,
                              wave=note.wave if note else 0, waves=note.waves if note else 0,
                              rollout_phase=note.phase.value if note else "",
                              bake_until=note.bake_until if note else None,
                              halt_reason=note.halt_reason if note else ""))
    return out
