"""planning/disruption/exclusions.py: the typed reason a node is left out, in node_check's order, and shared
messages."""

from __future__ import annotations

from datetime import UTC, datetime

from api.catalog import load_default_catalog
from planning.cluster import ClaimInfo, Cluster, NodeInfo, parse_claim, parse_node
from planning.disruption.candidates import node_check
from planning.disruption.exclusions import ExclusionReason, excluded_nodes, exclusion_of

AT = datetime(2026, 11, 22, 20, tzinfo=UTC)


def _node(name: str, labels: dict[str, str], claim: ClaimInfo | None = None) -> NodeInfo:
    node = parse_node(0, {"metadata": {"name": name, "labels": labels}})
    node.claim, node.pool = claim, labels.get("karpenter.sh/nodepool", claim.node_pool if claim else "")
    return node


def _claim(initialized: bool, pool: str = "default") -> ClaimInfo:
    conds = [{"type": "Initialized", "status": "True"}] if initialized else []
    return parse_claim({"metadata": {"name": "c", "uid": "u", "labels": {"karpenter.sh/nodepool": pool}},
                        "spec": {}, "status": {"conditions": conds}})


def test_each_reason_in_order() -> None:
    pools = {"default": object()}
    pool = {"karpenter.sh/nodepool": "default"}
    cases = [
        (_node("a", pool), ExclusionReason.NO_NODE_CLAIM),
        (_node("b", pool, _claim(initialized=False)), ExclusionReason.NOT_INITIALIZED),
        (_node("c", {}, _claim(initialized=True)), ExclusionReason.NO_NODE_POOL_LABEL),
        (_node("d", {"karpenter.sh/nodepool": "ghost"}, _claim(True, "ghost")), ExclusionReason.UNKNOWN_NODE_POOL),
    ]
    for node, reason in cases:
        got = exclusion_of(node, pools)
        assert got is not None and got.reason is reason, node.name
    assert exclusion_of(_node("e", pool, _claim(initialized=True)), pools) is None
    # no NodeClaim is reported first even when the node is also uninitialized and names no pool
    assert exclusion_of(_node("f", {}), pools).reason is ExclusionReason.NO_NODE_CLAIM  # type: ignore[union-attr]
    assert [e.node for e in excluded_nodes([n for n, _ in reversed(cases)], pools)] == ["a", "b", "c", "d"]


def test_node_check_gives_the_same_message() -> None:
    """The planner's candidacy and the exclusion list read one text, so `blocked` and `excluded` agree."""
    node = _node("d", {"karpenter.sh/nodepool": "ghost"}, _claim(True, "ghost"))
    cluster = Cluster([node], {}, [], [], [], load_default_catalog())
    refused = node_check(node, cluster, set(), AT)
    assert refused is not None and refused.message == exclusion_of(node, {}).message  # type: ignore[union-attr]
