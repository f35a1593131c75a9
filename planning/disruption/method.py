"""The one small interface every disruption method implements (like Karpenter's `Method`), and the pass context.

A method says which candidates it wants (`should_disrupt`) and turns them into commands within the
budgets (`compute_commands`). What they share — the cluster view, the scheduler, budgets, blocked nodes
and events — lives in `PassContext`, built once per planner pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from api.events import EventReason
from planning.cluster import Cluster, NodeInfo
from planning.disruption.candidates import Candidate, sentence
from planning.disruption.commands import Blocked, Command, PlanEvent, PodMove, Replacement, ScoredMove
from planning.policies.view import PolicyView
from planning.scheduling.simulation import Scheduler, SimResult


class Method(Protocol):
    """A disruption method: name, budget reason, disruption class, filter, and command computation."""

    name: str
    reason: str
    disruption_class: str

    def should_disrupt(self, candidate: Candidate) -> bool: ...

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]: ...


@dataclass
class Limits:
    """Caps that keep a pass fast on big clusters (Karpenter: 100 candidates, 1 min multi, 3 min single)."""

    multi_node_max_candidates: int = 100
    multi_node_seconds: float = 60.0
    single_node_seconds: float = 180.0


@dataclass
class PassContext:
    """What one planner pass shares between methods.

    `clock` times the search loops (seconds, monotonic); a test passes a fake one to run out of time on cue.
    """

    cluster: Cluster
    scheduler: Scheduler
    at: datetime
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic
    blocked: dict[str, Blocked] = field(default_factory=dict)
    events: list[PlanEvent] = field(default_factory=list)
    # the pools' DisruptionPolicies (planning/policies/view.py)
    policies: PolicyView = field(default_factory=PolicyView)
    # each Balanced pool's score of each consolidation move it evaluated (Karpenter's approval metrics, §19.1)
    scored: list[ScoredMove] = field(default_factory=list)
    _event_keys: set[tuple[str, str, str]] = field(default_factory=set)

    def block(self, node: NodeInfo, reason: str, event_reason: str = EventReason.DISRUPTION_BLOCKED) -> None:
        """List a node as blocked (first reason wins) and emit the matching event on Node and NodeClaim."""
        self.blocked.setdefault(node.name, Blocked(node=node.name, reason=reason, node_pool=node.pool or None,
                                                   event_reason=event_reason))
        self.node_event(node, event_reason, reason)

    def block_for_budget(self, node: NodeInfo, reason: str, pool: str) -> None:
        """List a node as blocked by its pool's spent `reason` budget, with the reason typed for plan's budget rows."""
        self.block(node, budget_message(reason, pool))
        blocked = self.blocked[node.name]
        if blocked.budget_reason is None and blocked.reason == budget_message(reason, pool):  # first reason wins
            blocked.budget_reason = reason

    def budget_exhausted(self, c: Candidate, reason: str, budgets: dict[str, int]) -> bool:
        """True, with the node listed as blocked, when the candidate's pool allows no more `reason` disruptions."""
        if budgets.get(c.pool.name, 0) > 0:
            return False
        self.block_for_budget(c.node, reason, c.pool.name)
        return True

    def take_within_budget(self, reason: str, budgets: dict[str, int], cands: list[Candidate]) -> list[Candidate]:
        """The candidates, in order, while their pool's budget lasts (spending it); the rest are blocked."""
        taken = []
        for c in cands:
            if not self.budget_exhausted(c, reason, budgets):
                budgets[c.pool.name] -= 1
                taken.append(c)
        return taken

    def node_event(self, node: NodeInfo, reason: str, message: str) -> None:
        self.event("Node", node.name, reason, sentence(message))
        if node.claim is not None:
            self.event("NodeClaim", node.claim.name, reason, sentence(message))

    def event(self, kind: str, name: str, reason: str, message: str, type_: str = "Normal",
              namespace: str | None = None) -> None:
        key = (kind, f"{namespace}/{name}" if namespace else name, reason + message)
        if key not in self._event_keys:
            self._event_keys.add(key)
            self.events.append(PlanEvent(kind=kind, name=name, reason=reason, message=message,  # type: ignore[arg-type]
                                         type=type_, namespace=namespace))  # type: ignore[arg-type]


def budget_message(reason: str, pool: str) -> str:
    """The blocked-node message of a spent budget, shared by every method that honours budgets."""
    return f"disruption budget of nodepool {pool} allows no more {reason} disruptions"


class Deadline:
    """A time budget for a search loop, read from an injectable clock so tests need no real waiting."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.end = clock() + seconds

    def passed(self) -> bool:
        return self.clock() >= self.end


def make_command(method: Method, candidates: list[Candidate], sim: SimResult | None,
                 replacements: list[Replacement], savings: float,
                 provisioning: list[Replacement] | None = None) -> Command:
    """A Command for `candidates`, with the simulated pod moves (new nodes as `new-<i>`)."""
    nodes = [c.node for c in candidates]
    moves = []
    if sim is not None:
        names = {c.name for c in candidates}
        moves = [PodMove(pod=p.key, to=to, why=sim.volume_limited.get(p.key)) for p, to in sim.placements
                 if p.node_name in names]
        moves.sort(key=lambda m: m.pod)
    return Command(
        method=method.name,  # type: ignore[arg-type]
        reason=method.reason,  # type: ignore[arg-type]
        node_pool=candidates[0].pool.name,
        nodes=[n.name for n in nodes],
        replacements=replacements,
        savings_per_hour=round(savings, 6),
        pods=moves,
        node_uids=[n.uid for n in nodes],
        node_claims=[n.claim.name if n.claim else "" for n in nodes],
        provider_ids=[(n.claim.provider_id if n.claim else "") or n.raw.get("spec", {}).get("providerID", "")
                      for n in nodes],
        provisioning=provisioning or [],
    )
