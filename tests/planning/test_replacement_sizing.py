"""Drift and expiration size new nodes from the pods that can be rescheduled now (docs/semantics.md §3.4, §4.2).

A do-not-disrupt pod or one under a fully blocking PDB (maxUnavailable 0, minAvailable 100%) is not
"currently reschedulable": it stays until the NodeClaim's terminationGracePeriod, so no room is bought for
it. Such a pod only reaches drift when a terminationGracePeriod lets the node past the pod-level checks.
"""

from __future__ import annotations

from datetime import timedelta

from planning_factory import AT, OLD, node_and_claim, nodepool, pdb, pod, snapshot, ts

from api import labels as L
from api.catalog import load_default_catalog
from planning.disruption.commands import Command
from planning.planner.plan import plan

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
DND = {L.DO_NOT_DISRUPT_ANNOTATION: "true"}


def _drifted(name: str, **kw) -> list[dict]:
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(OLD)},
            {"type": "Drifted", "status": "True", "lastTransitionTime": ts(OLD)}]
    return node_and_claim(name, "m5.4xlarge", conditions=cond, **kw)


def _drift_command(*objs) -> Command:
    (cmd,) = plan(snapshot(nodepool(consolidate_after="Never", requirements=REQ), *objs), AT).commands
    assert cmd.method == "Drift" and cmd.nodes == ["a"]
    return cmd


def _smallest_cpu(cmd: Command) -> float:
    """Cores of the smallest type the (single) replacement may launch as."""
    (rep,) = cmd.replacements
    catalog = load_default_catalog()
    return min(catalog.get(t).cpu_cores for t in rep.instance_types)  # type: ignore[union-attr]


def test_drift_replacement_is_not_sized_for_a_do_not_disrupt_pod() -> None:
    pods = [pod("big-1", "a", "12", "40Gi"), pod("small-1", "a", "1", "1Gi")]
    counted = _drift_command(_drifted("a", tgp="1h"), *pods)
    assert _smallest_cpu(counted) >= 13 and {m.pod for m in counted.pods} == {"default/big-1", "default/small-1"}
    pods[0] = pod("big-1", "a", "12", "40Gi", annotations=DND)
    sized = _drift_command(_drifted("a", tgp="1h"), *pods)
    assert _smallest_cpu(sized) < 12 and [(m.pod, m.to) for m in sized.pods] == [("default/small-1", "new-0")]
    assert sized.replacements[0].price < counted.replacements[0].price


def test_drift_of_a_node_holding_only_a_do_not_disrupt_pod_needs_no_replacement() -> None:
    cmd = _drift_command(_drifted("a", tgp="1h"), pod("big-1", "a", "12", "40Gi", annotations=DND))
    assert cmd.replacements == [] and cmd.pods == []


def test_drift_replacement_is_not_sized_for_a_fully_pdb_blocked_pod() -> None:
    objs = [_drifted("a", tgp="1h"), pod("db-1", "a", "12", "40Gi", labels={"app": "db"}),
            pod("small-1", "a", "1", "1Gi")]
    cmd = _drift_command(*objs, pdb("db", {"app": "db"}, 0, max_unavailable=0))
    assert _smallest_cpu(cmd) < 12 and [m.pod for m in cmd.pods] == ["default/small-1"]
    percent = _drift_command(*objs, pdb("db", {"app": "db"}, 0, max_unavailable="0%"))
    assert [m.pod for m in percent.pods] == ["default/small-1"]


def test_a_pdb_with_no_disruption_left_but_not_fully_blocking_still_counts() -> None:
    objs = [_drifted("a", tgp="1h"), pod("db-1", "a", "12", "40Gi", labels={"app": "db"}),
            pod("small-1", "a", "1", "1Gi")]
    cmd = _drift_command(*objs, pdb("db", {"app": "db"}, 0, max_unavailable=1))
    assert _smallest_cpu(cmd) >= 13 and len(cmd.pods) == 2


def test_without_termination_grace_period_such_a_drifted_node_is_blocked_entirely() -> None:
    np = nodepool(consolidate_after="Never", requirements=REQ)
    result = plan(snapshot(np, _drifted("a"), pod("big-1", "a", "12", "40Gi", annotations=DND)), AT)
    assert result.commands == [] and [b.node for b in result.blocked] == ["a"]
    assert 'pod has "karpenter.sh/do-not-disrupt" annotation' in result.blocked[0].reason


def test_expiration_provisions_nothing_for_a_pod_the_drain_cannot_evict_now() -> None:
    np = nodepool(expire_after="24h", requirements=REQ)
    old = node_and_claim("old", "m5.4xlarge", created=AT - timedelta(hours=25))
    result = plan(snapshot(np, old, pod("big-1", "old", "12", "40Gi", annotations=DND),
                           pod("small-1", "old", "12", "40Gi")), AT)
    (cmd,) = result.commands
    assert cmd.method == "Expiration" and [m.pod for m in cmd.pods] == ["default/small-1"]
    assert len(cmd.provisioning) == 1


def test_consolidation_leaves_out_a_fully_pdb_blocked_pod_too() -> None:
    """An unready pod under an AlwaysAllow PDB passes the candidate check; maxUnavailable 0 still pins it."""
    stuck = pod("stuck-1", "a", "3500m", "1Gi", labels={"app": "stuck"})
    stuck["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    budget = pdb("stuck", {"app": "stuck"}, 0, max_unavailable=0)
    budget["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    keep = node_and_claim("b", node_annotations=DND)
    result = plan(snapshot(nodepool(requirements=REQ), node_and_claim("a"), keep, stuck, budget,
                           pod("x-1", "a", "500m", "1Gi"), pod("y-1", "b", "1", "1Gi")), AT)
    (cmd,) = result.commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.nodes == ["a"] and cmd.replacements == []
    assert [(m.pod, m.to) for m in cmd.pods] == [("default/x-1", "b")]
