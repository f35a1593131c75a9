"""Soft-then-hard expiration (docs/semantics.md §15.1): from a DisruptionPolicy's gracefulExpireAfter on, a node is
replaced like a drifted one (budgeted, in its calendar's windows, replacement launched first), with reason
`Expiring`; at the NodePool's expireAfter the forceful Expiration (planning/disruption/expiration.py) takes it as
before.

Expiring spends the NodePool's `Drifted` budget: Karpenter's budgets know only Empty, Drifted and Underutilized,
and a graceful rotation is the same kind of work as drift (one replacement per node, eventual class), so an
operator's drift budget (e.g. `nodes: 1` for `reasons: [Drifted]`) also paces graceful expiry.
"""

from __future__ import annotations

from datetime import datetime

from api import labels as L
from planning.cluster import NodeInfo
from planning.disruption.candidates import Candidate
from planning.disruption.drift import Drift
from planning.disruption.expiration import expires_at
from planning.disruption.method import PassContext
from planning.disruption.method_names import MethodName
from planning.policies.expiry_jitter import jitter_offset, pool_jitter

REASON_EXPIRING = "Expiring"


def graceful_since(node: NodeInfo, ctx: PassContext) -> datetime | None:
    """When the node's graceful expiry starts: its NodeClaim's creation + the policy's gracefulExpireAfter, moved
    earlier by the same share of it as the hard expiry (`expiration.jitter`, docs/semantics.md §15.12), so the
    graceful start stays before the node's own hard expiry."""
    claim = node.claim
    if claim is None or claim.created is None:
        return None
    after = ctx.policies.graceful_after(node.pool)
    if after is None:
        return None
    return claim.created + after - jitter_offset(claim.name, after, pool_jitter(ctx.policies, node.pool))


class GracefulExpiration(Drift):
    """One node per pass past its gracefulExpireAfter and not yet expired (oldest first), within `Drifted` budget.
    A node that is also drifted is left to Drift, which runs first and gives the truer reason."""

    name = MethodName.GRACEFUL_EXPIRATION
    reason = REASON_EXPIRING
    budget_reason = L.REASON_DRIFTED

    def since(self, node: NodeInfo) -> datetime | None:
        return graceful_since(node, self.ctx)

    def should_disrupt(self, c: Candidate) -> bool:
        if c.pool.static:
            return False
        start = graceful_since(c.node, self.ctx)
        if start is None or start > self.ctx.at:
            return False
        hard = expires_at(c.node, self.ctx)
        if hard is not None and hard <= self.ctx.at:  # the forceful Expiration's now
            return False
        return self.drift_reason(c) is None
