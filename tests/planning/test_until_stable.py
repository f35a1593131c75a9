"""--until-stable: passes applied to an in-memory copy until nothing changes; apply_commands itself."""

from __future__ import annotations

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.planner.plan import apply_commands, plan

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
       {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5", "m6i"]}]


def test_consolidation_converges_and_cost_falls():
    np = nodepool(requirements=REQ, budgets=[{"nodes": "2"}])
    objs = [node_and_claim(f"n{i}", "m5.2xlarge", zone=("us-east-1a", "us-east-1b")[i % 2]) for i in range(6)]
    pods = [pod(f"app{i}-{j}", f"n{i}", "500m", "1Gi") for i in range(6) for j in range(2)]
    snap = snapshot(np, *objs, *pods)
    once = plan(snap, AT)
    stable = plan(snap, AT, until_stable=True)
    before = 6 * 0.384
    assert stable.final.passes >= 2 and len(stable.commands) >= 2
    assert stable.commands[0] == once.commands[0]
    assert stable.final.cost_per_hour < once.final.cost_per_hour < before
    assert stable.final.nodes < 6
    # stable means one more pass finds nothing
    assert stable.commands and all(c.method in ("MultiNodeConsolidation", "SingleNodeConsolidation", "Emptiness")
                                   for c in stable.commands)


def test_drift_rollout_with_budget_one_replaces_one_node_per_pass():
    from api.nodepool import NodePool

    old = NodePool.model_validate(nodepool(requirements=REQ, consolidate_after="Never")).template_hash()
    np = nodepool(requirements=REQ, consolidate_after="Never", labels={"image": "v2"},
                  budgets=[{"nodes": "1", "reasons": ["Drifted"]}])
    objs = [node_and_claim(f"n{i}", "m5.xlarge", claim_annotations={L.TEMPLATE_HASH_ANNOTATION: old})
            for i in range(3)]
    pods = [pod(f"big{i}-1", f"n{i}", "3", "12Gi") for i in range(3)]
    result = plan(snapshot(np, *objs, *pods), AT, until_stable=True)
    assert [c.method for c in result.commands] == ["Drift"] * 3
    assert [len(c.nodes) for c in result.commands] == [1, 1, 1]
    assert all(len(c.replacements) == 1 for c in result.commands)
    assert result.final.nodes == 3 and result.final.passes == 4


def test_apply_commands_moves_pods_removes_nodes_and_adds_replacements():
    np = nodepool(requirements=REQ)
    snap = snapshot(np, *[node_and_claim(n, "m5.2xlarge") for n in ("a", "b")], pod("x-1", "a", "1", "1Gi"),
                    pod("y-1", "b", "1", "1Gi"), pod("ds-1", "a", owner="DaemonSet"))
    result = plan(snap, AT)
    (cmd,) = result.commands
    after = apply_commands(snap, result.commands, at=AT)
    names = {n["metadata"]["name"] for n in after.nodes}
    assert not names & set(cmd.nodes) and len(names) == 1
    (new,) = names
    moved = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in after.pods
             if p["metadata"]["name"] in ("x-1", "y-1", "ds-1")}
    assert moved == {"x-1": new, "y-1": new}  # the DaemonSet pod went with its node
    assert [c.name for c in after.node_claims] == [new]
    assert after.node_claims[0].annotation(L.TEMPLATE_HASH_ANNOTATION) == after.node_pools[0].template_hash()
    assert len(snap.nodes) == 2 and snap.pods[0]["spec"]["nodeName"] == "a"  # the input is untouched


def test_until_stable_without_work_is_one_pass():
    result = plan(snapshot(nodepool(consolidate_after="Never"), node_and_claim("a"), pod("x-1", "a")), AT,
                  until_stable=True)
    assert result.commands == [] and result.final.passes == 1 and result.final.nodes == 1
    assert result.final.cost_per_hour == 0.192
