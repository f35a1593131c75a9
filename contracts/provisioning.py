"""Inputs, outputs and progress of ProvisioningWorkflow (small, so histories stay small).

Shared by workflows/, activities/ and runtime/ (the pending-pod intake): plain pydantic models, no I/O.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from contracts.disruption import LaunchedReplacement, Replacement, StaticScaleUp

WORKFLOW_ID_PREFIX = "provision-"
LAUNCH_REASON = "Provisioning"
STATIC_LAUNCH_REASON = "StaticCapacity"  # NodeflowReason of a static NodePool's scale-up
# A batch's pods travel in its workflow's input and again in its plan activity's: each part a workflow starts with
# stays under Temporal's payload warning size (`limit.blobSize.warn`, 512 KiB; it refuses 2 MiB, and gRPC 4 MiB)
PART_BYTES = 480 * 1024
COMPACT_ABOVE = 50  # launches: a larger plan's JSON names each distinct Replacement once (ProvisioningPlan)
REPLACEMENTS, REPLACEMENT_INDEX = "replacements", "replacement_index"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PodRef(_Model):
    """A pending pod of a batch: `key` is `namespace/name`; `virtual`: a CapacityBuffer's placeholder
    (docs/semantics.md §20), which exists in no API server: no Event names it."""

    key: str
    uid: str
    virtual: bool = False


def ref_bytes(pod: PodRef) -> int:
    """The bytes `pod` takes in a workflow input's JSON, an upper bound: its key and uid (Kubernetes names are
    ASCII, so nothing in them is escaped) and the field names around them."""
    return 40 + len(pod.key.encode()) + len(pod.uid.encode())  # {"key":"","uid":"","virtual":false}, is 36


def batch_parts(pods: list[PodRef], part_bytes: int = PART_BYTES) -> list[list[PodRef]]:
    """`pods` in order, cut into parts whose input stays under `part_bytes`: one part for any batch seen so far
    (1,000 pods take ~100 KB); a window of tens of thousands of pods becomes several workflows, where one would be
    refused (30,000 pods: 3.1 MB of input plus a 1.2 MB memo, over gRPC's 4 MiB) and its pods never get capacity."""
    parts: list[list[PodRef]] = [[]]
    used = 0
    for pod in pods:
        size = ref_bytes(pod)
        if parts[-1] and used + size > part_bytes:
            parts.append([])
            used = 0
        parts[-1].append(pod)
        used += size
    return parts if parts[0] else []


def batch_workflow_id(pods: list[PodRef]) -> str:
    """The batch's id, from its pods' uids (sorted): a worker that restarts mid-batch and batches the same pods
    again starts the same workflow (USE_EXISTING), never a second one."""
    digest = hashlib.sha256(",".join(sorted(p.uid for p in pods)).encode()).hexdigest()[:20]
    return f"{WORKFLOW_ID_PREFIX}{digest}"


class ProvisioningSettings(_Model):
    """Timing knobs; tests shrink them. Karpenter waits up to 15 min for registration; 10 min here, as disruption."""

    ready_timeout_seconds: float = 600.0
    ready_poll_seconds: float = 5.0
    ice_backoff_seconds: float = 30.0  # first wait after every offering answered ICE; doubles each time
    ice_attempts: int = 3  # launch rounds for one NodeClaim before the batch gives up on it
    launch_timeout_seconds: float = 60.0  # one launch attempt (workflows/provisioning.py LAUNCH); tests shorten it
    catalog_path: str | None = None


class ProvisioningInput(_Model):
    pods: list[PodRef]
    settings: ProvisioningSettings = Field(default_factory=ProvisioningSettings)
    # a static NodePool's scale-up (no pods): its NodeClaims are planned already, from the pool's template
    static: StaticScaleUp | None = None


class ProvisioningPlanInput(_Model):
    pods: list[PodRef]
    at: datetime
    batch_id: str
    catalog_path: str | None = None


class NodeClaimLaunch(_Model):
    """One NodeClaim the decision launches: the launch activity's Replacement and the pods it is for."""

    node_pool: str
    replacement: Replacement
    pods: list[str] = Field(default_factory=list)


class ProvisioningPlan(_Model):
    """A batch's decision. As JSON (a workflow payload), a plan of more than COMPACT_ABOVE launches names each distinct
    Replacement once, in `replacements`, and each launch its index there: Karpenter's hostname-spreading-xl planned
    1,000 launches naming the same ~100 types each, 1.66 MB against Temporal's 2 MiB payload limit. Both forms read
    back into this one; a worker older than the compact form cannot read it (docs/decisions.md §23)."""

    launches: list[NodeClaimLaunch] = Field(default_factory=list)
    nominated: int = 0  # pods of the batch expected on a NodeClaim already launching
    scheduled: int = 0  # pods of the batch that fit an existing node (the scheduler will bind them)
    unservable: list[str] = Field(default_factory=list)  # pods no NodePool serves (each got an Event)
    pools_at_limit: list[str] = Field(default_factory=list)
    gone: int = 0  # pods of the batch no longer pending

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        launches = data.get("launches") or []
        if info.mode != "json" or len(launches) <= COMPACT_ABOVE:
            return data
        table: list[Any] = []
        index: dict[str, int] = {}
        for launch in launches:
            at = index.setdefault(json.dumps(launch["replacement"], sort_keys=True), len(table))
            if at == len(table):
                table.append(launch["replacement"])
            del launch["replacement"]
            launch[REPLACEMENT_INDEX] = at
        data[REPLACEMENTS] = table
        return data

    @model_validator(mode="before")
    @classmethod
    def _expand(cls, data: Any) -> Any:
        if not isinstance(data, dict) or REPLACEMENTS not in data:
            return data
        table = data[REPLACEMENTS]
        launches = [{**{k: v for k, v in launch.items() if k != REPLACEMENT_INDEX},
                     "replacement": table[launch[REPLACEMENT_INDEX]]}
                    if isinstance(launch, dict) and REPLACEMENT_INDEX in launch else launch
                    for launch in data.get("launches") or []]
        return {**{k: v for k, v in data.items() if k != REPLACEMENTS}, "launches": launches}


class LaunchFailedInput(_Model):
    """Say on the NodePool that a launch found no capacity (`retry_seconds` None: the batch gives up on it), and on
    each pod it was for (Karpenter v1.15, kubernetes-sigs/karpenter#3143)."""

    node_pool: str
    offerings: list[str] = Field(default_factory=list)
    retry_seconds: float | None = None
    batch_id: str = ""
    pods: list[PodRef] = Field(default_factory=list)  # the launch's pods
    node_claim: str = ""  # the NodeClaim that got no instance (deleted since)
    error: str = ""  # what the launch answered


class ProvisioningPhase(StrEnum):
    """Where a provisioning batch is; the values are the `NodeflowPhase` search attribute."""

    PLANNING = "Planning"
    LAUNCHING = "Launching"
    WAITING_READY = "WaitingReady"
    SUCCEEDED = "Succeeded"  # every NodeClaim it launched is Ready (or nothing needed launching)
    PARTIAL = "Partial"  # some NodeClaims found no capacity or were not Ready in time (those were deleted)
    FAILED = "Failed"  # nothing it needed could be launched


class ProvisioningResult(_Model):
    outcome: ProvisioningPhase
    message: str = ""
    launched: list[LaunchedReplacement] = Field(default_factory=list)
    ready: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)  # NodeClaims removed (not Ready in time, or gone)
    no_capacity: list[str] = Field(default_factory=list)  # node pools whose launch exhausted its ICE retries
    unservable: list[str] = Field(default_factory=list)
