"""Every node consolidation refuses gets Karpenter's `Unconsolidatable` on its Node and its NodeClaim, with
Karpenter's message (disruption/consolidation.go ShouldDisrupt and computeConsolidation), not only the first."""

from __future__ import annotations

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.planner.plan import plan

M5 = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
      {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]


def _unconsolidatable(result: object) -> dict[tuple[str, str], str]:
    return {(e.kind, e.name): e.message for e in result.events  # type: ignore[attr-defined]
            if e.reason == "Unconsolidatable"}


def test_each_node_whose_pods_fit_nowhere_is_unconsolidatable_on_node_and_nodeclaim() -> None:
    names = [f"n{i}" for i in range(5)]
    objs = [o for n in names for o in (node_and_claim(n, "m5.large"),
                                       pod(f"{n}-gpu", n, "1", "1Gi", node_selector={"gpu": "yes"}))]
    result = plan(snapshot(nodepool(requirements=M5), *objs), AT)
    assert result.commands == []
    got = _unconsolidatable(result)
    for n in names:
        assert got[("Node", n)].startswith(f"Not all pods would schedule, default/{n}-gpu => "), got
        assert got[("NodeClaim", n)] == got[("Node", n)]


def test_each_non_empty_node_of_a_when_empty_pool_says_why() -> None:
    names = [f"w{i}" for i in range(3)]
    objs = [o for n in names for o in (node_and_claim(n), pod(f"{n}-x", n))]
    got = _unconsolidatable(plan(snapshot(nodepool(policy="WhenEmpty"), *objs), AT))
    assert {k for k in got if k[0] == "Node"} == {("Node", n) for n in names}
    assert {k for k in got if k[0] == "NodeClaim"} == {("NodeClaim", n) for n in names}
    assert all("WhenEmpty" in m or "non-empty consolidation disabled" in m for m in got.values()), got
