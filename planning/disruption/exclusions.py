"""The nodes the planner leaves out of every decision, and why (`nodeflow plan`'s `excluded`, docs/contracts.md §3.1).

Karpenter's candidacy (ValidateNodeDisruptable, pkg/controllers/disruption/helpers.go and
pkg/controllers/state/statenode.go) drops a Node without a NodeClaim, one not yet initialized, and one whose
NodePool label is missing or names no NodePool. Such a node is in no budget total, no command and (unless it is
also blocking) no `blocked` row, so a cluster whose nodes never got their NodeClaim looked simply empty. These
are the same tests `planning/disruption/candidates.py` `node_check` runs, in its order; the messages are shared with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from api import labels as L
from planning.cluster import NodeInfo


class ExclusionReason(StrEnum):
    """Why a node counts for nothing in a pass; callers branch on this, never on the message."""

    NO_NODE_CLAIM = "NoNodeClaim"  # no NodeClaim names it (status.nodeName or providerID): not managed
    NOT_INITIALIZED = "NotInitialized"  # no karpenter.sh/initialized=true and its claim is not Initialized
    NO_NODE_POOL_LABEL = "NoNodePoolLabel"  # the Node lacks karpenter.sh/nodepool
    UNKNOWN_NODE_POOL = "UnknownNodePool"  # its karpenter.sh/nodepool names no NodePool of the cluster


NOT_MANAGED = "node isn't managed by karpenter"
NOT_INITIALIZED = "node isn't initialized"
NO_POOL_LABEL = f"node doesn't have required label (label={L.NODEPOOL_LABEL})"


def pool_not_found(pool: str) -> str:
    return f"nodepool not found (NodePool={pool})"


@dataclass(frozen=True, slots=True)
class Exclusion:
    """One node left out of planning: its name, the typed reason and the message people read."""

    node: str
    reason: ExclusionReason
    message: str

    def to_public(self) -> dict[str, str]:
        return {"node": self.node, "reason": self.reason.value, "message": self.message}


def exclusion_of(node: NodeInfo, pools: Mapping[str, Any]) -> Exclusion | None:
    """The first membership test `node` fails (node_check's order), or None when the planner considers it."""
    if node.claim is None:
        return Exclusion(node.name, ExclusionReason.NO_NODE_CLAIM,
                         f"{NOT_MANAGED}: no NodeClaim has status.nodeName {node.name} or its providerID")
    if not node.initialized and not node.claim.condition_true("Initialized"):
        return Exclusion(node.name, ExclusionReason.NOT_INITIALIZED,
                         f"{NOT_INITIALIZED}: no {L.INITIALIZED_LABEL}=true label and NodeClaim "
                         f"{node.claim.name} is not Initialized")
    if not node.labels.get(L.NODEPOOL_LABEL):
        return Exclusion(node.name, ExclusionReason.NO_NODE_POOL_LABEL, NO_POOL_LABEL)
    if node.pool not in pools:
        return Exclusion(node.name, ExclusionReason.UNKNOWN_NODE_POOL, pool_not_found(node.pool))
    return None


def excluded_nodes(nodes: Iterable[NodeInfo], pools: Mapping[str, Any]) -> list[Exclusion]:
    """Every node the planner leaves out, by name."""
    found = (exclusion_of(n, pools) for n in nodes)
    return sorted((e for e in found if e is not None), key=lambda e: e.node)
