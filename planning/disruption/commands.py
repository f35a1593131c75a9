"""What a planner pass decides: the JSON of `nodeflow plan` (docs/contracts.md §3) as pydantic models.

The public JSON is exactly docs/contracts.md §3 (camelCase). Commands also carry what the workflows need to act
(node uids, NodeClaim names, provider ids, simulated placements); those fields only appear in the
output when asked for with `internal=True`, so the documented shape stays stable.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from api.events import terminate_first as terminate_first_message
from api.meta import RequirementOperator
from planning.disruption.method_names import MethodName
from planning.disruption.repair import Repair, RepairBlocked

# StaticDrift (static NodePools) is internal: `nodeflow plan` reports it under `staticNodePools`, not `commands`.
# Expiring: a DisruptionPolicy's gracefulExpireAfter passed (planning/policies/graceful_expiration.py); it spends the
# Drifted budget (docs/semantics.md §15.1).
# SpotFallback: an on-demand node launched because spot had no capacity goes back to spot
# (planning/policies/spot_return.py); it spends the Underutilized budget (docs/semantics.md §15.5).
Reason = Literal["Empty", "Drifted", "Underutilized", "Expired", "Expiring", "SpotFallback", "Unhealthy"]

METHOD_REASON: dict[str, str] = {
    MethodName.EMPTINESS: "Empty",
    MethodName.DRIFT: "Drifted",
    MethodName.MULTI_NODE_CONSOLIDATION: "Underutilized",
    MethodName.SINGLE_NODE_CONSOLIDATION: "Underutilized",
    MethodName.EXPIRATION: "Expired",
    MethodName.STATIC_DRIFT: "Drifted",
    MethodName.GRACEFUL_EXPIRATION: "Expiring",
    MethodName.SPOT_RETURN: "SpotFallback",
    MethodName.REPAIR: "Unhealthy",  # node repair as a method (planning/disruption/repair_method.py)
}


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="ignore")


class Requirement(_Model):
    """A node selector requirement (`{key, operator, values}`) a replacement must satisfy."""

    key: str
    operator: RequirementOperator
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
    # set when an existing node refused the pod for its volume attachment limit and it goes to a new node (§3.5)
    why: str | None = None


class TerminateFirst(StrEnum):
    """Why a static pool's drift command is delete-only (v1.15 terminate-first): no replacement fits under
    `limits.nodes`, so the node is drained and deleted and the pool's scale-up re-creates it. Branched on, not
    the message."""

    AT_REPLICAS = "AtReplicas"  # limits.nodes >= replicas and the pool is at its replicas
    AT_NODE_LIMIT = "AtNodeLimit"  # limits.nodes < replicas: held at its limit


class Command(_Model):
    """One disruption: delete `nodes`, after launching `replacements` when there are any."""

    method: MethodName
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
    terminate_first: TerminateFirst | None = None  # a delete-only StaticDrift command, and why

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
    budget_reason: str | None = None  # the disruption reason whose spent budget blocks it (plan's budget rows)


class SkippedMove(_Model):
    """A consolidation move that would save money, skipped because a DisruptionPolicy's threshold asks for more."""

    method: str
    node_pool: str
    nodes: list[str]
    savings_per_hour: float
    pods: int
    reason: str


class PolicyPool(_Model):
    """The DisruptionPolicy of one NodePool in this pass, and what it holds back (`nodeflow plan`)."""

    node_pool: str
    policy: str | None = None
    held: str | None = None  # a calendar hold: no voluntary disruption starts in this pool now
    held_until: datetime | None = None
    conflict: str | None = None  # two policies select the pool: neither applies
    hold: str | None = None  # internal: the hold's kind (planning/policies/calendar.py CalendarHold), for metrics
    drain: str | None = None  # drain.jobs Wait: what the pool's voluntary drains leave to finish (§15.8)

    def to_public(self) -> dict[str, Any]:
        row = {"nodePool": self.node_pool, "policy": self.policy, "held": self.held,
               "heldUntil": _rfc3339(self.held_until) if self.held_until else None, "conflict": self.conflict}
        return {**row, "drain": self.drain} if self.drain else row  # the key only where drain.jobs Wait applies


class PlanEvent(_Model):
    """A Kubernetes Event Karpenter would emit for this decision (`Unconsolidatable`, `DisruptionBlocked`)."""

    kind: Literal["Node", "NodeClaim", "NodePool", "Pod"]
    name: str
    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Normal"
    namespace: str | None = None  # a Pod's (do-not-disrupt Events, api/events.py)


class FinalState(_Model):
    """The cluster after the listed commands: node count, cost per hour, planner passes run."""

    nodes: int
    cost_per_hour: float
    passes: int


class StaticRemoval(_Model):
    """A node a static NodePool above its replicas gives up (planning/provisioning/static_capacity.py), with why it
    was chosen."""

    node: str
    pods: int
    why: str
    # internal: what its termination needs
    node_uid: str = ""
    node_claim: str = ""
    provider_id: str = ""


class StaticPool(_Model):
    """One static NodePool's decision in a pass: the node counts it was made on, what to launch, what to remove."""

    node_pool: str
    replicas: int
    running: int  # NodeClaims neither deleting nor taken by a disruption or termination (launching ones count)
    launching: int  # of `running`: not a Ready, initialized node yet
    pending_disruption: int  # taken by a disruption or termination in flight, not deleting yet
    deleting: int
    limit_nodes: int | None = None
    launch: int = 0
    replacement: Replacement | None = None  # what each launch asks for: the pool's template, cheapest first
    remove: list[StaticRemoval] = Field(default_factory=list)
    held: str | None = None  # why the pool launches fewer than it lacks, or removes nothing while above
    node_pool_uid: str = ""  # internal: names its scale-up workflow apart from a same-named pool elsewhere

    def to_public(self, drift: list[Command]) -> dict[str, Any]:
        """The `staticNodePools` entry of `nodeflow plan -o json` (docs/contracts.md §3.1)."""
        rep = self.replacement
        return {"nodePool": self.node_pool, "replicas": self.replicas,
                "nodes": {"running": self.running, "launching": self.launching,
                          "pendingDisruption": self.pending_disruption, "deleting": self.deleting},
                "limitNodes": self.limit_nodes, "launch": self.launch,
                "instanceTypes": list(rep.instance_types) if rep and self.launch else [],
                "capacityType": rep.capacity_type if rep and self.launch else None,
                "remove": [{"node": r.node, "pods": r.pods, "why": r.why} for r in self.remove],
                "drift": [self._drift_public(c) for c in drift], "held": self.held}

    def _drift_public(self, c: Command) -> dict[str, Any]:
        """A StaticDrift command: its replacement, or none and why it is terminate-first."""
        rep = c.replacements[0] if c.replacements else None
        why = None
        if c.terminate_first is not None:
            why = terminate_first_message(self.limit_nodes or 0, self.replicas)
        return {"node": c.nodes[0], "instanceTypes": list(rep.instance_types) if rep else [],
                "capacityType": rep.capacity_type if rep else None, "terminateFirst": why}


class ScoredMove(_Model):
    """One Balanced pool's score of a consolidation move (docs/semantics.md §5.10), for Karpenter's approval
    metrics `karpenter_consolidation_moves_total` / `karpenter_consolidation_score` (kubernetes-sigs/karpenter#3322)."""

    node_pool: str
    policy: str  # the pool's consolidationPolicy as written (Balanced)
    score: float  # inf when the move disrupts nothing of the pool's disruption cost
    approved: bool


class PlanResult(_Model):
    """The dry run's answer (docs/contracts.md §3). `events` is internal: the workflow publishes them."""

    at: datetime
    budgets: list[dict[str, Any]] = Field(default_factory=list)
    commands: list[Command] = Field(default_factory=list)
    blocked: list[Blocked] = Field(default_factory=list)
    final: FinalState
    events: list[PlanEvent] = Field(default_factory=list)
    # node repair (planning/disruption/repair.py); `nodeflow plan` adds them to its JSON as `repairs` / `repairsBlocked`
    repairs: list[Repair] = Field(default_factory=list)
    repairs_blocked: list[RepairBlocked] = Field(default_factory=list)
    repairs_vetoed: list[Repair] = Field(default_factory=list)  # due, but karpenter.sh/do-not-repair: `repairsVetoed`
    # static NodePools (planning/provisioning/static_capacity.py); `nodeflow plan` adds them as `staticNodePools`
    static_node_pools: list[StaticPool] = Field(default_factory=list)
    # DisruptionPolicy (planning/policies/view.py); `nodeflow plan` adds them as `disruptionPolicies` / `skippedMoves`
    policy_pools: list[PolicyPool] = Field(default_factory=list)
    skipped: list[SkippedMove] = Field(default_factory=list)
    # candidates per method of the first pass, for Karpenter's eligible_nodes gauge; never in the JSON (exclude)
    eligible: dict[str, int] = Field(default_factory=dict, exclude=True)
    # the first pass's Balanced scores, for Karpenter's approval metrics; never in the JSON (exclude)
    scored_moves: list[ScoredMove] = Field(default_factory=list, exclude=True)
    # the first pass's scheduling counts (planning/planner/plan.py scheduling_counts), for nodeflow's gauges (exclude)
    scheduling_counts: dict[str, int] = Field(default_factory=dict, exclude=True)

    def to_public(self, internal: bool = False) -> dict[str, Any]:
        """JSON-ready dict: exactly docs/contracts.md §3, §7, or with the internal fields too."""
        if internal:
            return self.model_dump(mode="json", by_alias=True)
        data = self.model_dump(
            mode="json",
            by_alias=True,
            exclude={
                "events": True, "repairs": True, "repairs_blocked": True, "repairs_vetoed": True,
                "static_node_pools": True,
                "policy_pools": True, "skipped": True,
                "commands": {"__all__": {"node_uids", "node_claims", "provider_ids", "provisioning",
                                          "terminate_first"}},
                "blocked": {"__all__": {"node_pool", "event_reason", "budget_reason"}},
            },
        )
        data["commands"] = [c for c in data["commands"] if c["method"] != MethodName.STATIC_DRIFT]  # see static_public
        for cmd in data["commands"]:
            for move in cmd["pods"]:
                if move.get("why") is None:
                    move.pop("why", None)
            for rep in cmd["replacements"]:
                for key in ("zone", "requirements", "nodePool"):
                    if rep.get(key) is None:
                        rep.pop(key, None)
        data["at"] = _rfc3339(self.at)
        return data

    def static_public(self) -> list[dict[str, Any]]:
        """`staticNodePools` of `nodeflow plan -o json`: each static pool's decision with its StaticDrift commands."""
        drift = [c for c in self.commands if c.method == MethodName.STATIC_DRIFT]
        return [p.to_public([c for c in drift if c.node_pool == p.node_pool]) for p in self.static_node_pools]


def _rfc3339(at: datetime) -> str:
    text = at.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
