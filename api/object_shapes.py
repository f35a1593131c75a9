"""Shape checks for the plain Kubernetes objects of a snapshot (Node, Pod, PodDisruptionBudget).

Planning reads these as dicts for speed; a wrong type or an impossible quantity deep inside one must be
reported against its document (`FILE: document N (Pod/ns/name): spec.containers[0]...: problem`) when the
snapshot is loaded, instead of surfacing later as a crash in the middle of a planning pass. Only the fields
planning reads are typed; everything else passes through untouched.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from api.quantity import QuantityError, parse_quantity

MAX_QUANTITY = 2**63  # base units; Kubernetes quantities are bounded by int64


def _quantity(value: str | int | float) -> str | int | float:
    try:
        q = parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None
    if not q.is_finite() or not math.isfinite(float(q)) or abs(q) > MAX_QUANTITY:
        raise ValueError(f"quantity {value!r} is out of range")
    if q < 0:
        raise ValueError(f"quantity {value!r} must not be negative")
    return value


Quantity = Annotated[str | int | float, AfterValidator(_quantity)]
Resources = dict[str, Quantity]
StrMap = dict[str, str]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _Meta(_Shape):
    name: str = ""
    namespace: str | None = None
    uid: str = ""
    creation_timestamp: str | None = Field(None, alias="creationTimestamp")
    deletion_timestamp: str | None = Field(None, alias="deletionTimestamp")
    labels: StrMap | None = None
    annotations: StrMap | None = None


class _Owner(_Shape):
    kind: str = ""
    name: str = ""
    uid: str | None = None
    controller: bool | None = None


class _PodMeta(_Meta):
    owner_references: list[_Owner] | None = Field(None, alias="ownerReferences")


class _Taint(_Shape):
    key: str = ""
    value: str | None = None
    effect: str = ""


class _Toleration(_Shape):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None


class _Condition(_Shape):
    type: str
    status: str


class _NodeSpec(_Shape):
    taints: list[_Taint] | None = None
    unschedulable: bool | None = None
    provider_id: str | None = Field(None, alias="providerID")


class _NodeStatus(_Shape):
    allocatable: Resources | None = None
    capacity: Resources | None = None
    conditions: list[_Condition] | None = None


class NodeShape(_Shape):
    metadata: _Meta
    spec: _NodeSpec | None = None
    status: _NodeStatus | None = None


class _Requirements(_Shape):
    requests: Resources | None = None
    limits: Resources | None = None


class _Container(_Shape):
    resources: _Requirements | None = None


class _Expression(_Shape):
    key: str
    operator: str
    values: list[str] | None = None


class _Selector(_Shape):
    match_labels: StrMap | None = Field(None, alias="matchLabels")
    match_expressions: list[_Expression] | None = Field(None, alias="matchExpressions")


class _Term(_Shape):
    match_expressions: list[_Expression] | None = Field(None, alias="matchExpressions")


class _NodeSelector(_Shape):
    node_selector_terms: list[_Term] | None = Field(None, alias="nodeSelectorTerms")


class _NodeAffinity(_Shape):
    required: _NodeSelector | None = Field(None, alias="requiredDuringSchedulingIgnoredDuringExecution")


class _PodAffinityTerm(_Shape):
    topology_key: str | None = Field(None, alias="topologyKey")
    label_selector: _Selector | None = Field(None, alias="labelSelector")
    namespaces: list[str] | None = None


class _PodAntiAffinity(_Shape):
    required: list[_PodAffinityTerm] | None = Field(None, alias="requiredDuringSchedulingIgnoredDuringExecution")


class _Affinity(_Shape):
    node_affinity: _NodeAffinity | None = Field(None, alias="nodeAffinity")
    pod_anti_affinity: _PodAntiAffinity | None = Field(None, alias="podAntiAffinity")


class _Spread(_Shape):
    topology_key: str | None = Field(None, alias="topologyKey")
    max_skew: int | None = Field(None, alias="maxSkew")
    when_unsatisfiable: str | None = Field(None, alias="whenUnsatisfiable")
    label_selector: _Selector | None = Field(None, alias="labelSelector")


class _PodSpec(_Shape):
    node_name: str | None = Field(None, alias="nodeName")
    containers: list[_Container] | None = None
    init_containers: list[_Container] | None = Field(None, alias="initContainers")
    overhead: Resources | None = None
    tolerations: list[_Toleration] | None = None
    node_selector: StrMap | None = Field(None, alias="nodeSelector")
    affinity: _Affinity | None = None
    topology_spread_constraints: list[_Spread] | None = Field(None, alias="topologySpreadConstraints")
    priority: int | None = None
    termination_grace_period_seconds: int | None = Field(None, alias="terminationGracePeriodSeconds")


class _PodStatus(_Shape):
    phase: str | None = None
    conditions: list[_Condition] | None = None


class PodShape(_Shape):
    metadata: _PodMeta
    spec: _PodSpec | None = None
    status: _PodStatus | None = None


class _PdbSpec(_Shape):
    min_available: int | str | None = Field(None, alias="minAvailable")
    max_unavailable: int | str | None = Field(None, alias="maxUnavailable")
    selector: _Selector | None = None


class PdbShape(_Shape):
    metadata: _Meta
    spec: _PdbSpec | None = None


SHAPES: dict[str, type[BaseModel]] = {"Node": NodeShape, "Pod": PodShape, "PodDisruptionBudget": PdbShape}


def check_shape(kind: str, obj: dict[str, Any]) -> None:
    """Raise pydantic's ValidationError (with field paths) when `obj` cannot be read by planning."""
    shape = SHAPES.get(kind)
    if shape is not None:
        shape.model_validate(obj)
