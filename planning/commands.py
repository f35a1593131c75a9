"""What a planner pass decides: the JSON of `nodeflow plan` (docs/contracts.md §3) as pydantic models.

The public JSON is exactly docs/contracts.md §3 (camelCase). Commands also carry what the workflows need to act
(node uids, NodeClaim names, provider ids, simulated placements); those fields only appear in the
output when asked for with `internal=True`, so the documented shape stays stable.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from planning.repair import Repair, RepairBlocked

Method = Literal["Emptiness", "Drift", "MultiNodeConsolidation", "SingleNodeConsolidation", "Expiration"]
Reason = Literal["Empty", "Drifted", "Underutilized", "Expired"]

METHOD_REASON: dict[str, str] = {
    "Emptiness": "Empty",
    "Drift": "Drifted",
    "MultiNodeConsolidation": "Underutilized",
    "SingleNodeConsolidation": "Underutilized",
    "Expiration": "Expired",
}


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="ignore")


class Requirement(_Model):
    """A node selector requirement (`{key, operator, values}`) a replacement must satisfy."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)


class Replacement(_Model):
    """A node to launch before the candidates go. `instance_types` are cheapest first."""

    instance_types: list[str]
    capacity_type: str
    price: float
    zone: str | None = None
    node_pool: str | None = None
    requirements: list[Requirement] | None = None


class PodMove(_Model):
    """Where a pod of a disrupted node lands in the simulation: an existing node or `new-<i>`."""

    pod: str
    to: str


class Command(_Model):
    """One disruption: delete `nodes`, after launching `replacements` when there are any."""

    method: Method
    reason: Reason
    node_pool: str
    nodes: list[str]
    replacements: list[Replacement] = Field(default_factory=list)
    savings_per_hour: float = 0.0
    pods: list[PodMove] = Field(default_factory=list)
    # internal: serialized only with internal=True
    node_uids: list[str] = Field(default_factory=list)
    node_claims: list[str] = Field(default_factory=list)
    provider_ids: list[str] = Field(default_factory=list)
    provisioning: list[Replacement] = Field(default_factory=list)

    @property
    def decision(self) -> str:
        """`replace` when replacements are pre-spun, else `delete` (Karpenter's command decision)."""
        return "replace" if self.replacements else "delete"


class Blocked(_Model):
    """A node the planner would disrupt but may not, and why."""

    node: str
    reason: str
    # internal
    node_pool: str | None = None
    event_reason: str | None = None


class PlanEvent(_Model):
    """A Kubernetes Event Karpenter would emit for this decision (`Unconsolidatable`, `DisruptionBlocked`)."""

    kind: Literal["Node", "NodeClaim", "NodePool"]
    name: str
    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Normal"


class FinalState(_Model):
    """The cluster after the listed commands: node count, cost per hour, planner passes run."""

    nodes: int
    cost_per_hour: float
    passes: int


class PlanResult(_Model):
    """The dry run's answer (docs/contracts.md §3). `events` is internal: the workflow publishes them."""

    at: datetime
    budgets: list[dict[str, Any]] = Field(default_factory=list)
    commands: list[Command] = Field(default_factory=list)
    blocked: list[Blocked] = Field(default_factory=list)
    final: FinalState
    events: list[PlanEvent] = Field(default_factory=list)
    # node repair (planning/repair.py); `nodeflow plan` adds them to its JSON as `repairs` / `repairsBlocked`
    repairs: list[Repair] = Field(default_factory=list)
    repairs_blocked: list[RepairBlocked] = Field(default_factory=list)

    def to_public(self, internal: bool = False) -> dict[str, Any]:
        """JSON-ready dict: exactly docs/contracts.md §3, §7, or with the internal fields too."""
        if internal:
            return self.model_dump(mode="json", by_alias=True)
        data = self.model_dump(
            mode="json",
            by_alias=True,
            exclude={
                "events": True, "repairs": True, "repairs_blocked": True,
                "commands": {"__all__": {"node_uids", "node_claims", "provider_ids", "provisioning"}},
                "blocked": {"__all__": {"node_pool", "event_reason"}},
            },
        )
        for cmd in data["commands"]:
            for rep in cmd["replacements"]:
                for key in ("zone", "requirements", "nodePool"):
                    if rep.get(key) is None:
                        rep.pop(key, None)
        data["at"] = _rfc3339(self.at)
        return data


def _rfc3339(at: datetime) -> str:
    text = at.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
