"""CapacityBuffer (`autoscaling.x-k8s.io/v1beta1`): headroom kept as virtual pods, the replacement for "pause pod"
overprovisioning (kubernetes-sigs/karpenter#3028, kubernetes-sigs/karpenter#3129; docs/semantics.md §20).

The API is the Cluster Autoscaler's (kubernetes/autoscaler cluster-autoscaler/apis/capacitybuffer), which Karpenter
v1.14 serves unchanged: one chunk's shape comes from a PodTemplate (`podTemplateRef`) or a workload's pod template
(`scalableRef`: Deployment, StatefulSet, ReplicaSet), the chunk count from `replicas`, `percentage` of the workload's
replicas and `limits` on the chunks' summed requests. The same rules are in
deploy/crds/autoscaling.x-k8s.io_capacitybuffers.yaml.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from api.duration import matches_pattern
from api.model_problems import model_problems
from api.validation import QUANTITY_PATTERN

GROUP = "autoscaling.x-k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "CapacityBuffer"
PLURAL = "capacitybuffers"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"  # the default (and only acted-on) provisioningStrategy

# Conditions and reasons on status (Karpenter's pkg/apis/autoscaling/v1beta1/constants.go, capacitybuffer/constants.go)
READY_FOR_PROVISIONING = "ReadyForProvisioning"
PROVISIONING = "Provisioning"
REASON_RESOLVED = "Resolved"
REASON_SCALABLE_REF_NOT_FOUND = "ScalableRefNotFound"
REASON_POD_TEMPLATE_NOT_FOUND = "PodTemplateNotFound"
REASON_RESOLUTION_FAILED = "ResolutionFailed"
REASON_FITS_EXISTING = "FitsExistingCapacity"
REASON_REQUIRES_NEW = "RequiresNewCapacity"
REASON_NOT_READY = "NotReadyForProvisioning"
REASON_EMPTY = "BufferEmpty"

# What marks a virtual pod and names its buffer (Karpenter's annotations, so `nodeflow plan -o json` reads the same)
FAKE_POD_ANNOTATION = "karpenter.sh/capacity-buffer-fake-pod"
BUFFER_NAME_ANNOTATION = "karpenter.sh/capacity-buffer-name"
BUFFER_NAMESPACE_ANNOTATION = "karpenter.sh/capacity-buffer-namespace"
VIRTUAL_POD_PRIORITY = -(2**31)  # math.MinInt32: the lowest value a pod can have
SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")  # apiGroup "apps" (or empty)

PODTEMPLATE_NEEDS_COUNT_MESSAGE = "If podTemplateRef is set, replicas or limits must also be set"
ONE_REF_MESSAGE = "You must define either PodTemplateRef or ScalableRef, but not both"


class LocalObjectRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)


class ScalableRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    api_group: str = Field("", alias="apiGroup")
    kind: str = Field(min_length=1)
    name: str = Field(min_length=1)


class CapacityBufferSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    provisioning_strategy: str = Field(ACTIVE_CAPACITY, alias="provisioningStrategy")
    pod_template_ref: LocalObjectRef | None = Field(None, alias="podTemplateRef")
    scalable_ref: ScalableRef | None = Field(None, alias="scalableRef")
    replicas: int | None = Field(None, ge=0, le=2**31 - 1)
    percentage: int | None = Field(None, ge=0, le=2**31 - 1)
    limits: dict[str, str | int] | None = None

    @model_validator(mode="after")
    def _rules(self) -> CapacityBufferSpec:
        """The CRD's two CEL rules, with its messages."""
        if self.pod_template_ref is not None and self.replicas is None and self.limits is None:
            raise ValueError(PODTEMPLATE_NEEDS_COUNT_MESSAGE)
        if self.pod_template_ref is not None and self.scalable_ref is not None:
            raise ValueError(ONE_REF_MESSAGE)
        for key, value in (self.limits or {}).items():
            if isinstance(value, bool) or not matches_pattern(QUANTITY_PATTERN, str(value)):
                raise ValueError(f"limits.{key}: {value!r} is not a quantity")
        return self


class Condition(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    type: str
    status: str
    reason: str = ""
    message: str = ""
    observed_generation: int | None = Field(None, alias="observedGeneration")
    last_transition_time: str | None = Field(None, alias="lastTransitionTime")


class CapacityBufferStatus(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    pod_template_ref: LocalObjectRef | None = Field(None, alias="podTemplateRef")
    replicas: int | None = None
    pod_template_generation: int | None = Field(None, alias="podTemplateGeneration")
    conditions: tuple[Condition, ...] = ()
    provisioning_strategy: str | None = Field(None, alias="provisioningStrategy")

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)


class CapacityBuffer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    api_version: str = Field(API_VERSION, alias="apiVersion")
    kind: str = KIND
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: CapacityBufferSpec
    status: CapacityBufferStatus = Field(default_factory=CapacityBufferStatus)

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "default")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid") or self.key)

    @property
    def generation(self) -> int:
        return int(self.metadata.get("generation") or 0)


def is_virtual(annotations: dict[str, str] | None) -> bool:
    """A pod carrying these annotations is a buffer's virtual pod: never bound, evicted, nominated or sent Events."""
    return bool(annotations) and annotations.get(FAKE_POD_ANNOTATION) == "true"  # type: ignore[union-attr]


def buffer_key(annotations: dict[str, str] | None) -> str:
    """`namespace/name` of the buffer a virtual pod belongs to ("" for a real pod)."""
    if not is_virtual(annotations):
        return ""
    assert annotations is not None
    ns, name = annotations.get(BUFFER_NAMESPACE_ANNOTATION, ""), annotations.get(BUFFER_NAME_ANNOTATION, "")
    return f"{ns}/{name}" if ns and name else ""


def validate_capacity_buffer(obj: Any) -> list[str]:
    """Every problem of one CapacityBuffer document as `path: problem`; empty when it is valid (`nodeflow validate`,
    the rules the CRD makes kube-apiserver apply)."""
    if not isinstance(obj, dict):
        return [f"(document): must be an object, got {type(obj).__name__}"]
    problems: list[str] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        problems.append("metadata.name: required field is missing")
    if not isinstance(obj.get("spec"), dict):
        return [*problems, "spec: required field is missing"]
    try:
        CapacityBuffer.model_validate(obj)
    except ValidationError as exc:
        problems += model_problems(exc, empty="spec")
    return problems
