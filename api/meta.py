"""Kubernetes building blocks shared by NodePool and NodeClaim: object metadata, taints, requirements, conditions.

Every model keeps unknown fields (`extra="allow"`) and remembers which fields were set, so
`model_dump(by_alias=True, exclude_unset=True)` gives back exactly the YAML that was read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from api.timestamps import format_timestamp, parse_timestamp

Timestamp = Annotated[datetime, BeforeValidator(parse_timestamp), PlainSerializer(format_timestamp, return_type=str)]

# NodeSelectorRequirement operators as Karpenter v1.15's CRDs enumerate them (kubernetes-sigs/karpenter#2924; Gte and
# Lte since kubernetes-sigs/karpenter#2674). The order is the CRD's: kube-apiserver lists the supported values in it
# when it refuses one, and `nodeflow validate` says the same.
RequirementOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
REQUIREMENT_OPERATORS: tuple[RequirementOperator, ...] = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte",
                                                          "Lte")
NUMERIC_OPERATORS: tuple[RequirementOperator, ...] = ("Gt", "Lt", "Gte", "Lte")
NUMERIC_OPERATOR_MESSAGE = "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"


class K8sModel(BaseModel):
    """Base: camelCase aliases, snake_case attributes, unknown fields kept, dumps by alias."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="allow",
    )

    _key_order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(data, dict) and any(v is None for v in data.values()):
            # The API server prunes nulls before defaulting: `expireAfter: null` means the default.
            optional = {key for name, f in cls.model_fields.items() if not f.is_required()
                        for key in (name, f.alias) if key}
            data = {k: v for k, v in data.items() if not (v is None and k in optional)}
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, K8sModel):
            model._key_order = tuple(data)
        return model

    @model_serializer(mode="wrap")
    def _keep_key_order(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Dump keys in the order they were read, so YAML in gives the same YAML out."""
        out = handler(self)
        if not self._key_order or not isinstance(out, dict):
            return out
        ordered = {k: out[k] for k in self._key_order if k in out}
        ordered.update((k, v) for k, v in out.items() if k not in ordered)
        return ordered

    def to_dict(self) -> dict[str, Any]:
        """The object as it was given (only fields that were set), JSON-compatible, camelCase keys."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class OwnerReference(K8sModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8sModel):
    """metadata of a Kubernetes object; only what nodeflow reads is typed, the rest passes through."""

    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    owner_references: list[OwnerReference] | None = None
    creation_timestamp: Timestamp | None = None
    deletion_timestamp: Timestamp | None = None


class Taint(K8sModel):
    key: str
    value: str | None = None
    effect: str
    time_added: Timestamp | None = None


class NodeSelectorRequirement(K8sModel):
    """A scheduling requirement; `minValues` is Karpenter's flexibility floor for `In`."""

    key: str
    operator: RequirementOperator  # an unknown one is refused on reading, as the CRD refuses it
    values: list[str] | None = None
    min_values: int | None = None


class NodeClassReference(K8sModel):
    group: str = ""
    kind: str = ""
    name: str = ""


class Condition(K8sModel):
    type: str
    status: str = "Unknown"
    reason: str | None = None
    message: str | None = None
    last_transition_time: Timestamp | None = None
    observed_generation: int | None = None


class TemplateMetadata(K8sModel):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


def condition_of(conditions: list[Condition] | None, type_: str) -> Condition | None:
    """The condition of the given type, if present."""
    for c in conditions or ():
        if c.type == type_:
            return c
    return None

