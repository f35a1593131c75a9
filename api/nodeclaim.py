"""karpenter.sh/v1 NodeClaim: the request for one node, and the record of the instance that serves it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from api import labels
from api.duration import parse_duration, parse_nillable_duration
from api.meta import (
    Condition,
    K8sModel,
    ObjectMeta,
    Timestamp,
    condition_of,
)
from api.nodepool import NodeClaimTemplateSpec

KIND = "NodeClaim"

# Condition types Karpenter and nodeflow set on a NodeClaim.
LAUNCHED = "Launched"
REGISTERED = "Registered"
INITIALIZED = "Initialized"
DRIFTED = "Drifted"
CONSOLIDATABLE = "Consolidatable"
INSTANCE_TERMINATING = "InstanceTerminating"
DISRUPTION_REASON = "DisruptionReason"
DRAINED = "Drained"
VOLUMES_DETACHED = "VolumesDetached"


class ResourceRequirements(K8sModel):
    requests: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None


class NodeClaimSpec(NodeClaimTemplateSpec):
    """What the NodeClaim template of a NodePool stamps out, plus the resources the claim asks for."""

    resources: ResourceRequirements | None = None


class NodeClaimStatus(K8sModel):
    provider_id: str | None = Field(default=None, alias="providerID")
    node_name: str | None = None
    image_id: str | None = Field(default=None, alias="imageID")
    capacity: dict[str, Any] | None = None
    allocatable: dict[str, Any] | None = None
    conditions: list[Condition] | None = None
    last_pod_event_time: Timestamp | None = None


class NodeClaim(K8sModel):
    """A karpenter.sh/v1 NodeClaim."""

    api_version: str = labels.API_VERSION
    kind: Literal["NodeClaim"] = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodeClaimSpec = Field(default_factory=NodeClaimSpec)
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def node_pool(self) -> str | None:
        """The NodePool that owns this claim (label karpenter.sh/nodepool)."""
        return (self.metadata.labels or {}).get(labels.NODEPOOL_LABEL)

    @property
    def provider_id(self) -> str | None:
        return self.status.provider_id

    @property
    def node_name(self) -> str | None:
        return self.status.node_name

    @property
    def deleting(self) -> bool:
        return self.metadata.deletion_timestamp is not None

    @property
    def created(self) -> datetime | None:
        return self.metadata.creation_timestamp

    @property
    def expire_after(self) -> timedelta | None:
        """None means Never."""
        return parse_nillable_duration(self.spec.expire_after)

    @property
    def termination_grace_period(self) -> timedelta | None:
        tgp = self.spec.termination_grace_period
        return None if tgp is None else parse_duration(tgp)

    def condition(self, type_: str) -> Condition | None:
        """The status condition of this type, or None."""
        return condition_of(self.status.conditions, type_)

    def is_true(self, type_: str) -> bool:
        """True iff the condition exists with status "True"."""
        c = self.condition(type_)
        return c is not None and c.status == "True"

    def annotation(self, key: str) -> str | None:
        return (self.metadata.annotations or {}).get(key)


def load_nodeclaim(data: dict[str, Any]) -> NodeClaim:
    """Build a NodeClaim from a dict (as read from YAML or the API)."""
    return NodeClaim.model_validate(data)
