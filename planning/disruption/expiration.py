"""Expiration (docs/semantics.md §6): a NodeClaim older than its expireAfter is deleted. Forceful: no budget,
no do-not-disrupt or PDB check at this stage, no pre-spun replacement. The pods' simulated destinations
(and the nodes the provisioner would add for them) are still reported so the dry run explains the move;
as for drift, only pods the drain can evict now are placed (a do-not-disrupt or fully PDB-blocked pod
stays until the terminationGracePeriod, if any).
"""

from __future__ import annotations

from datetime import datetime

from api import labels as L
from planning.cluster import Cluster, NodeInfo
from planning.disruption.candidates import Candidate, currently_reschedulable, disruption_cost, reschedulable_of
from planning.disruption.commands import Command
from planning.disruption.method import PassContext, make_command
from planning.disruption.method_names import MethodName
from planning.policies.expiry_jitter import jitter_offset, pool_jitter
from planning.policies.view import PolicyView
from planning.pricing.replacements import launch_replacements

MAX_PROVISIONED = 50


def expires_at(node: NodeInfo, ctx: PassContext) -> datetime | None:
    """creationTimestamp of the NodeClaim + expireAfter (the claim's own, else its NodePool's), moved earlier by
    the pool's DisruptionPolicy `expiration.jitter` (planning/policies/expiry_jitter.py, docs/semantics.md §15.12)."""
    return expiry_of(node, ctx.cluster, ctx.policies)


def expiry_of(node: NodeInfo, cluster: Cluster, policies: PolicyView) -> datetime | None:
    """`expires_at` without a pass: the pod deletion-cost ranking (planning/disruption/deletion_cost.py) asks it."""
    claim = node.claim
    if claim is None or claim.created is None:
        return None
    pool = cluster.pools.get(node.pool)
    expire = claim.expire_after if claim.has_expire_after else (pool.expire_after if pool else None)
    if expire is None:
        return None
    return claim.created + expire - jitter_offset(claim.name, expire, pool_jitter(policies, node.pool))


class Expiration:
    """Every managed, not-deleting node past its expiry, one delete command each."""

    name = MethodName.EXPIRATION
    reason = L.REASON_EXPIRED
    disruption_class = "forceful"

    def __init__(self, ctx: PassContext, exclude: set[str]) -> None:
        self.ctx = ctx
        self.exclude = exclude

    def should_disrupt(self, c: Candidate) -> bool:
        when = expires_at(c.node, self.ctx)
        return when is not None and when <= self.ctx.at

    def candidates(self) -> list[Candidate]:
        out = []
        for node in self.ctx.cluster.nodes:
            if node.claim is None or node.marked_for_deletion or node.name in self.exclude:
                continue
            pool = self.ctx.cluster.pools.get(node.pool)
            if pool is None:
                continue
            when = expires_at(node, self.ctx)
            if when is not None and when <= self.ctx.at:  # should_disrupt, before building the candidate
                out.append(Candidate(node, pool, reschedulable_of(node), disruption_cost(node, pool, self.ctx.at),
                                     node.price))
        return out

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        """Budgets are ignored. Each node's pods are placed away from every expiring node."""
        commands = []
        going = [c.node for c in candidates]
        for c in sorted(candidates, key=lambda c: (expires_at(c.node, self.ctx), c.name)):
            pods = currently_reschedulable(self.ctx.cluster, c.reschedulable, self.ctx.at)
            sim = self.ctx.scheduler.simulate(going, pods, max_new=MAX_PROVISIONED)
            provisioning, cost = launch_replacements(sim.new_nodes, self.ctx.scheduler.pool_options)
            commands.append(make_command(self, [c], sim, [], c.price - cost, provisioning=provisioning))
        return commands
