"""Until-stable runs see DaemonSet overhead on replacements (found by the consolidation bench)."""

from __future__ import annotations

from datetime import UTC, datetime

from api.snapshot import Snapshot
from bench.clusters import node_objects, node_pool, pod
from planning.disruption.commands import Command, PodMove, Replacement
from planning.planner.plan import apply_commands


def test_replacement_nodes_get_one_pod_per_daemonset_of_their_pool() -> None:
    objs = [node_pool(), *node_objects("n0", "m5.xlarge"), *node_objects("n1", "m5.xlarge"),
            pod("agent-n0", "n0", 0.1, 0.125, owner_kind="DaemonSet", owner="agent", namespace="kube-system"),
            pod("agent-n1", "n1", 0.1, 0.125, owner_kind="DaemonSet", owner="agent", namespace="kube-system"),
            pod("web-0", "n0", 1, 1)]
    cmd = Command(method="MultiNodeConsolidation", reason="Underutilized", node_pool="default", nodes=["n0"],
                  replacements=[Replacement(instance_types=["m5.large"], capacity_type="on-demand", price=0.096,
                                            node_pool="default")],
                  pods=[PodMove(pod="default/web-0", to="new-0")])
    after = apply_commands(Snapshot.from_objects(objs), [cmd], at=datetime(2026, 1, 1, 1, tzinfo=UTC))
    new = [n["metadata"]["name"] for n in after.nodes if n["metadata"]["name"] not in ("n0", "n1")]
    assert len(new) == 1
    on_new = [p for p in after.pods if p["spec"].get("nodeName") == new[0]]
    kinds = sorted(p["metadata"]["ownerReferences"][0]["kind"] for p in on_new)
    assert kinds == ["DaemonSet", "ReplicaSet"]
    assert not any(p["spec"].get("nodeName") == "n0" for p in after.pods)
