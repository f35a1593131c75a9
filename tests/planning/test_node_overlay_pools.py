"""NodeOverlays per NodePool in the planner's cluster: existing nodes and new-node options are priced by their own
pool's overlays (Karpenter evaluates overlays per NodePool, pkg/controllers/nodeoverlay)."""

from __future__ import annotations

from datetime import UTC, datetime

from planning_factory import node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster
from planning.planner.plan import run_plan
from planning.scheduling.simulation import Scheduler

AT = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)
AT_LEAST_M5 = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
               {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "m5.xlarge", "c5.large"]}]


def reserved_for(pool: str, itype: str, price: str = "0") -> dict:
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": f"ri-{pool}"},
            "spec": {"requirements": [{"key": L.NODEPOOL_LABEL, "operator": "In", "values": [pool]},
                                      {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": [itype]}],
                     "price": price}}


def test_existing_nodes_and_new_options_take_their_pools_prices() -> None:
    snap = snapshot(nodepool("a", requirements=AT_LEAST_M5), nodepool("b", requirements=AT_LEAST_M5),
                    node_and_claim("na", "m5.xlarge", pool="a"), node_and_claim("nb", "m5.xlarge", pool="b"),
                    reserved_for("a", "m5.xlarge", "0.01"))
    cluster = Cluster.from_snapshot(snap)
    assert cluster.by_name["na"].price == 0.01 and cluster.by_name["nb"].price == 0.192
    sched = Scheduler(cluster)
    first = {p: sched.pool_options(cluster.pools[p])[0].itype.name for p in ("a", "b")}
    assert first == {"a": "m5.xlarge", "b": "c5.large"}  # in a the reserved m5.xlarge is the cheapest new node


def test_a_pool_overlay_changes_that_pools_consolidation_only() -> None:
    """Two identical pools, each one m5.xlarge with a small pod: both are replaced by a cheaper node, except the
    pool whose m5.xlarge is reserved (price 0.01), where no replacement is cheaper."""
    objs = [nodepool("a", requirements=AT_LEAST_M5), nodepool("b", requirements=AT_LEAST_M5),
            node_and_claim("na", "m5.xlarge", pool="a"), node_and_claim("nb", "m5.xlarge", pool="b"),
            pod("web-a", "na", cpu="500m", node_selector={L.NODEPOOL_LABEL: "a"}),
            pod("web-b", "nb", cpu="500m", node_selector={L.NODEPOOL_LABEL: "b"})]
    plain = run_plan(snapshot(*objs), AT, until_stable=True).commands
    assert {(c.nodes[0], c.replacements[0].instance_types[0]) for c in plain} == {("na", "c5.large"),
                                                                                  ("nb", "c5.large")}
    reserved = run_plan(snapshot(*objs, reserved_for("a", "m5.xlarge", "0.01")), AT, until_stable=True).commands
    assert [c.nodes for c in reserved] == [["nb"]]
