"""provisioning.zoneBalance (docs/semantics.md §15.6): launches keep a pool's zones within N nodes of each other, and
consolidation prefers a node of the fullest zone among equally good candidates."""

from __future__ import annotations

from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.disruption.candidates import GRACEFUL, sort_for_consolidation
from planning.planner.plan import plan, prepare_pass
from planning.policies.zone_balance import balanced_zones, prefer_fullest_zones
from planning.provisioning.provisioner import decide

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
REQS = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]},
        {"key": L.ZONE_LABEL, "operator": "In", "values": ZONES}]


def policy(spread: int = 1) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "zones"},
            "spec": {"nodePools": ["default"], "provisioning": {"zoneBalance": spread}}}


def full_nodes(zones: list[str]) -> list[Any]:
    """One busy m5.xlarge per entry, in that zone (no room for another 3-CPU pod)."""
    objs: list[Any] = []
    for i, zone in enumerate(zones):
        objs += node_and_claim(f"n{i}", "m5.xlarge", zone=zone)
        objs.append(pod(f"busy{i}-1", f"n{i}", cpu="3000m"))
    return objs


def launch_zones(decision: Any) -> list[list[str]]:
    return [next((r.values for r in launch.replacement.requirements or () if r.key == L.ZONE_LABEL), [])
            for launch in decision.launches]


def test_balanced_zones_allows_only_zones_within_the_spread():
    counts = {"a": 2, "b": 1}
    assert balanced_zones(counts, {"a", "b", "c"}, 1) == {"c"}
    assert balanced_zones(counts, {"a", "b", "c"}, 2) == {"b", "c"}
    assert balanced_zones({}, {"a", "b"}, 1) == {"a", "b"}
    assert balanced_zones(counts, set(), 1) == set()


def test_launches_go_to_the_emptiest_zones_then_cheapest_within_the_spread():
    pending = [pod("new-1", None, cpu="3000m"), pod("new-2", None, cpu="3000m")]
    snap = snapshot(nodepool(requirements=REQS), *full_nodes(["us-east-1a", "us-east-1a", "us-east-1b"]), *pending,
                    policy())
    decision = decide(snap, at=AT)
    # {a: 2, b: 1, c: 0}: only c keeps the spread within 1; then {a: 2, b: 1, c: 1}: b or c, the same price, b first
    assert launch_zones(decision) == [["us-east-1c"], ["us-east-1b", "us-east-1c"]]


def test_without_zone_balance_the_launch_may_go_to_any_zone():
    snap = snapshot(nodepool(requirements=REQS), *full_nodes(["us-east-1a", "us-east-1a"]),
                    pod("new-1", None, cpu="3000m"))
    (launch,) = decide(snap, at=AT).launches
    assert launch.replacement.zone is None
    assert not any(r.key == L.ZONE_LABEL for r in launch.replacement.requirements or ())


def test_a_pod_pinned_to_the_full_zone_still_launches_there():
    pinned = pod("new-1", None, cpu="3000m", node_selector={L.ZONE_LABEL: "us-east-1a"})
    snap = snapshot(nodepool(requirements=REQS), *full_nodes(["us-east-1a", "us-east-1a"]), pinned, policy())
    (launch,) = decide(snap, at=AT).launches
    assert launch.replacement.zone == "us-east-1a"


def test_a_wider_spread_lets_the_cheapest_zone_take_more():
    snap = snapshot(nodepool(requirements=REQS), *full_nodes(["us-east-1a"]), pod("new-1", None, cpu="3000m"),
                    policy(spread=2))
    (launch,) = decide(snap, at=AT).launches
    assert launch.replacement.zone is None  # {a: 1}: a second node in a is within 2 of b and c: every zone


# ---- consolidation's tie-breaker ----------------------------------------------------------------------------

def _idle(budgets: list[dict[str, Any]] | None = None) -> list[Any]:
    """Three alike nodes with one small pod each: n0 in b, n1 and n2 in a (the fuller zone)."""
    objs: list[Any] = [nodepool(requirements=REQS, budgets=budgets)]
    for i, zone in enumerate(["us-east-1b", "us-east-1a", "us-east-1a"]):
        objs += node_and_claim(f"n{i}", "m5.xlarge", zone=zone)
        objs.append(pod(f"small{i}-1", f"n{i}", cpu="500m"))
    return objs


def test_equal_candidates_from_the_fullest_zone_go_first():
    setup = prepare_pass(snapshot(*_idle(), policy()), AT, None, set(), None)
    ordered = prefer_fullest_zones(sort_for_consolidation(setup.sets[GRACEFUL].candidates), setup.ctx)
    assert [c.name for c in ordered] == ["n1", "n2", "n0"]
    plain = prepare_pass(snapshot(*_idle()), AT, None, set(), None)
    ordered = prefer_fullest_zones(sort_for_consolidation(plain.sets[GRACEFUL].candidates), plain.ctx)
    assert [c.name for c in ordered] == ["n0", "n1", "n2"]  # no zoneBalance: Karpenter's order (name breaks ties)


def test_single_node_consolidation_removes_a_node_of_the_fullest_zone():
    one = [{"nodes": "1"}]
    (cmd,) = plan(snapshot(*_idle(one), policy()), AT).commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.nodes == ["n1"]
    (cmd,) = plan(snapshot(*_idle(one)), AT).commands
    assert cmd.nodes == ["n0"]
