"""nodeflow.dev/v1alpha1 FleetRollout: one node-image or NodePool-template change carried through many clusters in
stages (design in docs/fleet.md).

A document given to the CLI (`nodeflow fleet rollout start -f`), not a CRD: no one cluster owns a fleet. Each
cluster is named with the task queue its nodeflow worker polls in the fleet's one Temporal namespace; the change
is applied there by that worker, and the cluster's own machinery (NodeClass resolution, drift, DisruptionPolicy
waves) rolls it through its pools. The rollout's id comes from the change, so starting the same change twice is
one rollout.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, model_validator

from api.meta import K8sModel, ObjectMeta
from api.policy_fields import PolicyDuration, PolicyModel, to_timedelta

API_VERSION = "nodeflow.dev/v1alpha1"
KIND = "FleetRollout"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUEUE_PREFIX = "nodeflow-"  # a cluster's default task queue: nodeflow-<cluster>
ID_PREFIX = "fleet-"
DEFAULT_WORKER_TIMEOUT = "2m"


class OnFailure(StrEnum):
    """What a cluster that fails (a halted pool rollout, a failed gate, its stage's timeout) does to the fleet."""

    HALT = "Halt"  # the whole fleet stops until `nodeflow fleet rollout resume`
    SKIP = "Skip"  # the cluster is left where it is and reported; the stage goes on without it


class NodeClassChange(PolicyModel):
    """Set an EC2NodeClass's `amiSelectorTerms` (an AMI id, name, or an alias with a pinned version)."""

    name: str = Field(min_length=1, max_length=253)
    ami_selector_terms: list[dict[str, Any]] = Field(min_length=1, max_length=30)


class NodePoolTemplateChange(PolicyModel):
    """A JSON merge patch (RFC 7386) applied under each target NodePool's `spec.template`."""

    patch: dict[str, Any] = Field(min_length=1)


class FleetChange(PolicyModel):
    node_class: NodeClassChange | None = None
    node_pool_template: NodePoolTemplateChange | None = None

    @model_validator(mode="after")
    def _one(self) -> FleetChange:
        if (self.node_class is None) == (self.node_pool_template is None):
            raise ValueError("exactly one of 'nodeClass' and 'nodePoolTemplate' must be set")
        return self

    def digest(self) -> str:
        """A stable hash of the change (key order and whitespace never matter)."""
        blob = json.dumps(self.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True,
                          separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


class FleetCluster(PolicyModel):
    name: str = Field(pattern=DNS_LABEL, max_length=63)
    task_queue: str | None = Field(default=None, min_length=1, max_length=200)
    node_pools: list[str] = Field(min_length=1, max_length=100)

    @property
    def queue(self) -> str:
        return self.task_queue or f"{QUEUE_PREFIX}{self.name}"


class FleetStage(PolicyModel):
    name: str = Field(pattern=DNS_LABEL, max_length=63)
    clusters: list[FleetCluster] = Field(min_length=1, max_length=100)
    bake_time: PolicyDuration | None = None  # after every cluster of the stage finished, before the next stage
    timeout: PolicyDuration | None = None  # a cluster not finished this long after its change was applied has failed

    @property
    def bake(self) -> timedelta:
        return to_timedelta(self.bake_time) or timedelta(0)

    @property
    def time_limit(self) -> timedelta | None:
        return to_timedelta(self.timeout)


class PrometheusGate(PolicyModel):
    """A PromQL query that must hold (a non-empty result, every sample non-zero) at every check of the bake."""

    url: str = Field(pattern=r"^https?://[^/\s]+")
    query: str = Field(min_length=1, max_length=4096)


class FleetGates(PolicyModel):
    pods_ready: bool = True  # every pod of the cluster Running and Ready, none Pending
    prometheus: PrometheusGate | None = None


class FleetRolloutSpec(PolicyModel):
    change: FleetChange
    stages: list[FleetStage] = Field(min_length=1, max_length=50)
    gates: FleetGates = Field(default_factory=FleetGates)
    max_clusters_in_flight: int = Field(default=1, ge=1, le=100)
    on_failure: OnFailure = OnFailure.HALT
    # how long a cluster's worker may not answer before it is reported
    worker_timeout: PolicyDuration = DEFAULT_WORKER_TIMEOUT

    @model_validator(mode="after")
    def _unique(self) -> FleetRolloutSpec:
        _check_unique([s.name for s in self.stages], "stage")
        clusters = [c for s in self.stages for c in s.clusters]
        _check_unique([c.name for c in clusters], "cluster")
        _check_unique([c.queue for c in clusters], "task queue")
        return self


def _check_unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} {name!r} appears twice; each may appear once in a rollout")
        seen.add(name)


class FleetRollout(K8sModel):
    api_version: Literal["nodeflow.dev/v1alpha1"] = API_VERSION
    kind: Literal["FleetRollout"] = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: FleetRolloutSpec

    @property
    def rollout_id(self) -> str:
        """`fleet-<hash of the change>`: one rollout per change, whatever the document is called."""
        return f"{ID_PREFIX}{self.spec.change.digest()}"

    def targets(self) -> list[tuple[str, str]]:
        """(cluster, NodePool) pairs the rollout touches, in stage order."""
        return [(c.name, p) for s in self.spec.stages for c in s.clusters for p in c.node_pools]


def load_fleet_rollout(data: dict[str, Any]) -> FleetRollout:
    return FleetRollout.model_validate(data)


def rollout_id_ok(text: str) -> bool:
    return re.fullmatch(rf"{ID_PREFIX}[0-9a-f]{{12}}", text) is not None


RECORD_ANNOTATION = "nodeflow.dev/fleet-rollout"  # on the changed object: {"id", "stage", "previous"}


def record_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The fleet rollout record an object carries; None when absent or unreadable."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(RECORD_ANNOTATION)
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
