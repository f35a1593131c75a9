"""Karpenter's NodeOverlay (`karpenter.sh/v1alpha1`): price, price adjustment and extended-resource capacity for the
instance types and offerings its requirements select. How operators say what Savings Plans and Reserved Instances
make a type cost (docs/semantics.md §16.2).

Follows kubernetes-sigs/karpenter pkg/apis/v1alpha1/nodeoverlay.go (fields, patterns, CEL rules) and
nodeoverlay_validation.go (runtime validation); the same rules are in deploy/crds/karpenter.sh_nodeoverlays.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from api import labels
from api.model_problems import model_problems
from api.validation import label_key_problem, label_value_problem

GROUP = labels.GROUP
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "NodeOverlay"
PLURAL = "nodeoverlays"
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
MAX_REQUIREMENTS = 100
WEIGHT_RANGE = (1, 10000)
# Karpenter's kubebuilder patterns: an absolute price, or a signed adjustment (absolute, or a percentage; a decrease
# by at most 100%).
PRICE_PATTERN = r"^\d+(\.\d+)?$"
PRICE_ADJUSTMENT_PATTERN = r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$"
# Capacity adds extended resources only (v1.WellKnownResources may not be overlaid).
RESTRICTED_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")
BOTH_PRICES_MESSAGE = "cannot set both 'price' and 'priceAdjustment'"
RESTRICTED_CAPACITY_MESSAGE = "invalid resource restricted"


class OverlayRequirement(BaseModel):
    """A node selector requirement; Gte and Lte besides the usual operators (Karpenter's v1alpha1 form)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
    values: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _values(self) -> OverlayRequirement:
        problem = label_key_problem(self.key) if self.key != labels.NODEPOOL_LABEL else None
        if problem:
            raise ValueError(f"key: {problem}")
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"requirements with operator '{self.operator}' must have a value defined")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"requirements with operator '{self.operator}' must not have values")
        if self.operator in NUMERIC_OPERATORS and (len(self.values) != 1 or not self.values[0].isdigit()):
            raise ValueError("requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer "
                             "value")
        for v in self.values:
            if (problem := label_value_problem(v)) is not None:
                raise ValueError(f"values: {problem}")
        return self


class NodeOverlaySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    requirements: tuple[OverlayRequirement, ...] = Field(max_length=MAX_REQUIREMENTS)  # required, may be empty
    price: str | None = None
    price_adjustment: str | None = Field(default=None, alias="priceAdjustment")
    capacity: dict[str, str] = Field(default_factory=dict)
    weight: int | None = Field(default=None, ge=WEIGHT_RANGE[0], le=WEIGHT_RANGE[1])

    @field_validator("price", mode="before")
    @classmethod
    def _price(cls, v: Any) -> Any:
        if v is not None and (not isinstance(v, str) or re.fullmatch(PRICE_PATTERN, v) is None):
            raise ValueError(f"{v!r} must be a price in US dollars per hour, e.g. '0.052' (pattern {PRICE_PATTERN})")
        return v

    @field_validator("price_adjustment", mode="before")
    @classmethod
    def _adjustment(cls, v: Any) -> Any:
        if v is not None and (not isinstance(v, str) or re.fullmatch(PRICE_ADJUSTMENT_PATTERN, v) is None):
            raise ValueError(f"{v!r} must be a signed amount ('+0.1', '-0.05') or percentage ('+10%', '-15%', at "
                             f"most '-100%')")
        return v

    @field_validator("capacity", mode="before")
    @classmethod
    def _capacity(cls, v: Any) -> Any:
        if isinstance(v, dict):
            restricted = sorted(k for k in v if k in RESTRICTED_CAPACITY)
            if restricted:
                raise ValueError(f"{RESTRICTED_CAPACITY_MESSAGE}: {', '.join(restricted)} (capacity adds extended "
                                 f"resources only)")
            return {str(k): str(q) for k, q in v.items()}
        return v

    @model_validator(mode="after")
    def _one_price(self) -> NodeOverlaySpec:
        if self.price is not None and self.price_adjustment is not None:
            raise ValueError(BOTH_PRICES_MESSAGE)
        return self


class NodeOverlay(BaseModel):
    """One NodeOverlay document."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    api_version: Literal["karpenter.sh/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["NodeOverlay"] = KIND
    metadata: dict[str, Any]
    spec: NodeOverlaySpec
    status: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def weight(self) -> int:
        """Unset is 0: below every overlay that sets one."""
        return self.spec.weight or 0

    @property
    def price_change(self) -> str | None:
        return self.spec.price if self.spec.price is not None else self.spec.price_adjustment

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def adjusted_price(price: float, change: str | None) -> float:
    """Karpenter's AdjustedPrice: an unsigned value replaces the price, a signed one adds to it (a percentage of
    it with `%`); never below 0."""
    if not change:
        return price
    if not change.startswith(("+", "-")):
        return float(change)
    out = price * (1 + float(change[:-1]) / 100) if change.endswith("%") else price + float(change)
    return max(out, 0.0)


def by_weight(overlays: Sequence[NodeOverlay]) -> list[NodeOverlay]:
    """Karpenter's OrderByWeight: higher weight first; at equal weight the name later in the alphabet first."""
    return sorted(overlays, key=lambda o: (o.weight, o.name), reverse=True)


def load_node_overlay(obj: dict[str, Any]) -> NodeOverlay:
    return NodeOverlay.model_validate(obj)


def node_overlay_warnings(obj: Any) -> list[str]:
    """What is valid for Karpenter but does nothing in nodeflow (docs/semantics.md §16.2)."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return []
    out = []
    if spec.get("capacity"):
        out.append("spec.capacity: nodeflow's scheduling simulation does not count extended resources yet; the "
                   "capacity is recorded, not scheduled on")
    return out


def validate_node_overlay(obj: Any) -> list[str]:
    """Every problem of one NodeOverlay document as `path: problem`; empty when it is valid (`nodeflow validate`)."""
    if not isinstance(obj, dict):
        return [f"(document): must be an object, got {type(obj).__name__}"]
    problems: list[str] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        problems.append("metadata.name: required field is missing")
    elif meta.get("namespace"):
        problems.append("metadata.namespace: NodeOverlay is cluster-scoped; remove the namespace")
    if not isinstance(obj.get("spec"), dict):
        return [*problems, "spec: required field is missing"]
    try:
        NodeOverlay.model_validate(obj)
    except ValidationError as exc:
        problems += [line for line in model_problems(exc) if line not in problems]
    return problems
