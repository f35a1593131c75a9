"""karpenter.sh/v1 NodePool as a pydantic model, with Karpenter's defaults and the accessors the planner uses.

Defaults are those the CRD applies (docs/semantics.md §1.1): they show through the accessors and in
`defaulted()`, but `to_dict()` returns only what was written, so YAML in gives the same YAML out.
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import timedelta
from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from api import labels
from api.duration import parse_duration, parse_nillable_duration
from api.meta import (
    K8sModel,
    NodeClassReference,
    NodeSelectorRequirement,
    ObjectMeta,
    Taint,
    TemplateMetadata,
)

KIND = "NodePool"
DEFAULT_EXPIRE_AFTER = "720h"
DEFAULT_CONSOLIDATE_AFTER = "0s"
DEFAULT_CONSOLIDATION_POLICY = "WhenEmptyOrUnderutilized"
DEFAULT_BUDGET_NODES = "10%"
# Karpenter v1.14's policies (pkg/apis/v1/nodepool.go; "Balanced" since v1.14.0, kubernetes-sigs/karpenter#2962;
# docs/semantics.md §5.10).
POLICY_WHEN_EMPTY = "WhenEmpty"
POLICY_WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"
POLICY_BALANCED = "Balanced"
CONSOLIDATION_POLICIES = (POLICY_WHEN_EMPTY, POLICY_WHEN_EMPTY_OR_UNDERUTILIZED, POLICY_BALANCED)
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
# Balanced approves a move when its score reaches 1/k (Karpenter's BalancedK).
BALANCED_K = 2

DEPRECATED_EXPIRE_AFTER_WARNING = (
    "spec.disruption.expireAfter is deprecated (AKS NAP spelling); Karpenter v1 reads "
    "spec.template.spec.expireAfter, where the value was moved"
)


def _check_nillable(value: str | None) -> str | None:
    if value is not None:
        try:
            parse_nillable_duration(value)
        except ValueError as exc:
            raise ValueError(str(exc)) from exc
    return value


class Budget(K8sModel):
    """One disruption budget. Kept as written (strings) so that an unusable budget still loads and can be
    reported: Karpenter treats it as 0 allowed disruptions for every reason (see api/budgets.py)."""

    model_config = ConfigDict(coerce_numbers_to_str=True)

    nodes: str = DEFAULT_BUDGET_NODES
    reasons: list[str] | None = None
    schedule: str | None = None
    duration: str | None = None
    time_zone: str | None = None


def _default_budgets() -> list[Budget]:
    return [Budget(nodes=DEFAULT_BUDGET_NODES)]


class Disruption(K8sModel):
    consolidation_policy: ConsolidationPolicy = DEFAULT_CONSOLIDATION_POLICY
    consolidate_after: str = DEFAULT_CONSOLIDATE_AFTER
    budgets: list[Budget] = Field(default_factory=_default_budgets, max_length=50)

    @field_validator("consolidate_after")
    @classmethod
    def _consolidate_after(cls, v: str) -> str:
        return _check_nillable(v) or v


class NodeClaimTemplateSpec(K8sModel):
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list)
    node_class_ref: NodeClassReference | None = None
    taints: list[Taint] | None = None
    startup_taints: list[Taint] | None = None
    expire_after: str = DEFAULT_EXPIRE_AFTER
    termination_grace_period: str | None = None

    @field_validator("expire_after")
    @classmethod
    def _expire(cls, v: str) -> str:
        return _check_nillable(v) or v

    @field_validator("termination_grace_period")
    @classmethod
    def _tgp(cls, v: str | None) -> str | None:
        if v is not None:
            parse_duration(v)
        return v


class NodeClaimTemplate(K8sModel):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    spec: NodeClaimTemplateSpec = Field(default_factory=NodeClaimTemplateSpec)


class NodePoolSpec(K8sModel):
    template: NodeClaimTemplate = Field(default_factory=NodeClaimTemplate)
    disruption: Disruption = Field(default_factory=Disruption)
    limits: dict[str, Any] | None = None
    weight: int | None = None
    # Static NodePool (Karpenter's StaticCapacity): keep exactly this many nodes (docs/semantics.md §14).
    replicas: int | None = Field(default=None, ge=0)


def move_deprecated_fields(data: Any) -> tuple[Any, list[str]]:
    """Move `spec.disruption.expireAfter` (AKS NAP docs) to `spec.template.spec.expireAfter`; return warnings.

    When both are set, the template value wins and the deprecated one is dropped with a warning.
    """
    if not isinstance(data, dict):
        return data, []
    disruption = (data.get("spec") or {}).get("disruption") if isinstance(data.get("spec"), dict) else None
    if not isinstance(disruption, dict) or "expireAfter" not in disruption:
        return data, []
    data = copy.deepcopy(data)
    spec = data["spec"]
    value = spec["disruption"].pop("expireAfter")
    template = spec.setdefault("template", {})
    if not isinstance(template, dict):
        return data, [DEPRECATED_EXPIRE_AFTER_WARNING]
    tspec = template.setdefault("spec", {})
    if not isinstance(tspec, dict):
        return data, [DEPRECATED_EXPIRE_AFTER_WARNING]
    if "expireAfter" in tspec:
        return data, [
            "spec.disruption.expireAfter is deprecated and ignored: spec.template.spec.expireAfter "
            f"({tspec['expireAfter']!r}) is set"
        ]
    tspec["expireAfter"] = value
    return data, [DEPRECATED_EXPIRE_AFTER_WARNING]


class NodePool(K8sModel):
    """A karpenter.sh/v1 NodePool."""

    api_version: str = labels.API_VERSION
    kind: Literal["NodePool"] = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodePoolSpec = Field(default_factory=NodePoolSpec)
    status: dict[str, Any] | None = None

    _warnings: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _deprecated_aliases(cls, data: Any, handler: Any) -> NodePool:
        data, warnings = move_deprecated_fields(data)
        model = handler(data)
        if warnings:
            model._warnings = list(warnings)
        return model

    # -- accessors ---------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def warnings(self) -> list[str]:
        """Deprecation warnings found while reading (e.g. spec.disruption.expireAfter)."""
        return list(self._warnings)

    @property
    def expire_after(self) -> timedelta | None:
        """None means Never."""
        return parse_nillable_duration(self.spec.template.spec.expire_after)

    @property
    def consolidate_after(self) -> timedelta | None:
        """None means Never: consolidation is disabled for this pool."""
        return parse_nillable_duration(self.spec.disruption.consolidate_after)

    @property
    def termination_grace_period(self) -> timedelta | None:
        tgp = self.spec.template.spec.termination_grace_period
        return None if tgp is None else parse_duration(tgp)

    @property
    def consolidation_policy(self) -> str:
        return self.spec.disruption.consolidation_policy

    @property
    def budgets(self) -> list[Budget]:
        return self.spec.disruption.budgets

    @property
    def requirements(self) -> list[NodeSelectorRequirement]:
        return self.spec.template.spec.requirements

    @property
    def weight(self) -> int:
        """Karpenter treats an unset weight as 0 (lowest priority)."""
        return self.spec.weight or 0

    @property
    def replicas(self) -> int | None:
        """`spec.replicas`: the node count a static NodePool keeps; None for a dynamic pool."""
        return self.spec.replicas

    @property
    def is_static(self) -> bool:
        return self.spec.replicas is not None

    @property
    def template_labels(self) -> dict[str, str]:
        return dict(self.spec.template.metadata.labels or {})

    def annotation(self, key: str) -> str | None:
        return (self.metadata.annotations or {}).get(key)

    def defaulted(self) -> dict[str, Any]:
        """The object with every CRD default filled in (what the API server would store)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def template_hash(self) -> str:
        """Stable hash of the template fields whose change is drift (docs/semantics.md §4.1).

        Included: template labels, annotations, taints, startupTaints, nodeClassRef, expireAfter and
        terminationGracePeriod (compared by value, so "720h" == "43200m"; absent == default). Not
        included: requirements, resources, weight, limits, disruption. Empty equals absent and taint order
        does not matter (Karpenter hashes with IgnoreZeroValue and SlicesAsSets).
        """
        t = self.spec.template
        expire = self.expire_after
        tgp = self.termination_grace_period

        def taint_set(taints: list[Taint] | None) -> list[list[str]]:
            return sorted([tt.key, tt.value or "", tt.effect] for tt in taints or ())

        ref = t.spec.node_class_ref
        material = {
            "labels": dict(sorted((t.metadata.labels or {}).items())),
            "annotations": dict(sorted((t.metadata.annotations or {}).items())),
            "taints": taint_set(t.spec.taints),
            "startupTaints": taint_set(t.spec.startup_taints),
            "nodeClassRef": [ref.group, ref.kind, ref.name] if ref else [],
            "expireAfter": None if expire is None else expire.total_seconds(),
            "terminationGracePeriod": None if tgp is None else tgp.total_seconds(),
        }
        blob = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def load_nodepool(data: dict[str, Any]) -> NodePool:
    """Build a NodePool from a dict (as read from YAML or the API)."""
    return NodePool.model_validate(data)
