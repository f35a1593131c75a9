"""Expiry jitter (docs/semantics.md §15.12, aws/karpenter-provider-aws issue 1884): each node expires EARLIER by a
fixed share of its expireAfter, so a fleet launched in one hour does not expire in one hour.

The share is a hash of the NodeClaim's name, never a random number or the clock: every planner pass, every worker
replica and every restart computes the same instant for the same node, and `nodeflow plan` on a snapshot agrees
with the worker. The name (not the uid) is hashed because it is in every snapshot, uid or not, and a NodeClaim's
name is unique while it lives. Jitter only moves expiry earlier, never later: an operator's expireAfter stays the
promise that no node lives longer.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from decimal import Decimal
from typing import Any

_SCALE = 2 ** 64


def node_share(claim_name: str) -> float:
    """A number in [0, 1) fixed by the NodeClaim's name: the first 8 bytes of its SHA-256 over 2^64 (uniform)."""
    digest = hashlib.sha256(claim_name.encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def jitter_offset(claim_name: str, window: timedelta, fraction: Decimal | float | None) -> timedelta:
    """How much earlier than `window` after creation the node's expiry falls: `window x fraction x share`, in
    [0, window x fraction), in whole seconds (as Kubernetes timestamps), rounded down so it never exceeds the share."""
    if not fraction or window <= timedelta(0):
        return timedelta(0)
    return timedelta(seconds=int(window.total_seconds() * float(fraction) * node_share(claim_name)))


def pool_jitter(policies: Any, pool: str) -> Decimal | None:
    """The jitter fraction of the DisruptionPolicy that selects `pool` (planning/policies/view.py PolicyView), or
    None."""
    policy = policies.of(pool) if policies is not None else None
    expiration = policy.spec.expiration if policy is not None else None
    return expiration.jitter_fraction if expiration is not None else None
