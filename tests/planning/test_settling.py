"""Consolidation waits while the pods of in-flight disruptions settle (disruption/settling.py, semantics §5.11).

The failure mode in miniature (bench.karpenter_suite basic: every consolidation command that failed validation was
planned while pods were terminating): node a is being disrupted, its pod wa-1 terminating and its successor wa-2 not
yet bound. A pass that consolidated now would delete b onto x; 15 s later kube-scheduler has bound wa-2 to b, the
emptiest node, and the command fails validation ("candidates changed"). While a's pods settle, the pass waits.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from api import labels as L
from planning.cluster import Cluster
from planning.disruption.settling import LAUNCH_HOLD_SECONDS, Settling, settling
from planning.disruption.validation import Decision, Mismatch
from planning.planner import plan as plan_module
from planning.planner.accounting import KeptReason, account_pass
from planning.planner.plan import run_pass
from planning.planner.recheck import recheck_consolidation
from tests.planning.planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

TYPES = {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}
ON_DEMAND = {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}
DISRUPTED = [dict(L.DISRUPTED_TAINT)]


def deleting(obj: dict[str, Any], started: datetime, grace: int = 30) -> dict[str, Any]:
    """The pod as the API server has it after an eviction at `started` with `grace` seconds to go."""
    obj["metadata"]["deletionTimestamp"] = ts(started + timedelta(seconds=grace))
    obj["metadata"]["deletionGracePeriodSeconds"] = grace
    return obj


def cluster_objs(evicted: datetime = AT - timedelta(seconds=5), *, a_taints: list[dict[str, Any]] | None = DISRUPTED,
                 owner: str = "ReplicaSet", bound_to_b: bool = False, b_event: datetime | None = None) -> list[Any]:
    return [
        nodepool(consolidate_after="30s", requirements=[ON_DEMAND, TYPES]),
        node_and_claim("x", "m5.2xlarge"),
        pod("big-1", "x", cpu="4", memory="1Gi", annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"}),  # x stays
        node_and_claim("a", "m5.xlarge", taints=a_taints), deleting(pod("wa-1", "a", cpu="500m", owner=owner), evicted),
        pod("wa-2", "b" if bound_to_b else None, cpu="500m", owner=owner),  # wa-1's successor (same owner)
        node_and_claim("b", "m5.xlarge", last_pod_event=b_event), pod("wb-1", "b", cpu="1", memory="1Gi"),
    ]


def flat(objs: list[Any], drop: str = "") -> list[dict[str, Any]]:
    out = [o for x in objs for o in (x if isinstance(x, list) else [x])]
    return [o for o in out if o["metadata"]["name"] != drop]


def consolidations(out: Any) -> list[Any]:
    return [c for c in out.commands if c.method.endswith("NodeConsolidation")]


def no_hold(*_: Any) -> Settling:
    return Settling()


def test_without_the_hold_the_command_planned_now_fails_its_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "settling", no_hold)  # the pass as it was
    out = run_pass(snapshot(*cluster_objs()), AT)
    cmd = next(c for c in out.commands if c.nodes == ["b"])
    assert not cmd.replacements
    later = AT + timedelta(seconds=15)  # validation: wa-1 gone, wa-2 bound to b by kube-scheduler
    objs = flat(cluster_objs(bound_to_b=True, b_event=later), drop="wa-1")
    why = recheck_consolidation(snapshot(*objs), later, ["b"],
                                Decision.of(cmd.method, cmd.nodes, cmd.replacements)).mismatch
    assert why is Mismatch.CANDIDATES_CHANGED


def test_while_evicted_pods_settle_the_pass_starts_no_consolidation() -> None:
    out = run_pass(snapshot(*cluster_objs()), AT)
    assert not consolidations(out), out.commands
    assert out.settling == Settling(terminating=1, displaced=1)
    assert "1 terminating" in out.settling.message()


def test_once_they_settle_consolidation_goes_on() -> None:
    objs = flat(cluster_objs(), drop="wa-1")
    bound = [pod("wa-2", "x", cpu="500m") if o["metadata"]["name"] == "wa-2" else o for o in objs]
    out = run_pass(snapshot(*bound), AT)
    assert not out.settling.held
    assert any(c.nodes == ["b"] for c in out.commands), out.commands


def test_a_pod_terminating_longer_than_the_window_holds_nothing() -> None:
    out = run_pass(snapshot(*cluster_objs(evicted=AT - timedelta(minutes=5))), AT)
    assert not out.settling.held
    assert consolidations(out), out.commands


@pytest.mark.parametrize("why", ["node not in flight", "daemonset"])
def test_pods_terminating_elsewhere_or_daemonsets_hold_nothing(why: str) -> None:
    objs = cluster_objs(a_taints=None) if why == "node not in flight" else cluster_objs(owner="DaemonSet")
    cluster = Cluster.from_snapshot(snapshot(*objs))
    assert settling(cluster, set(), AT) == Settling()


def test_a_node_in_the_busy_set_counts_as_in_flight() -> None:
    cluster = Cluster.from_snapshot(snapshot(*cluster_objs(a_taints=None)))
    assert settling(cluster, {"a"}, AT) == Settling(terminating=1, displaced=1)


def test_emptiness_is_not_held() -> None:
    objs = [*cluster_objs(), *node_and_claim("e", "m5.xlarge")]
    out = run_pass(snapshot(*objs), AT)
    assert out.settling.held
    assert [c.nodes for c in out.commands if c.method == "Emptiness"] == [["e"]]


def test_nodeflow_plan_says_why_consolidation_kept_a_node() -> None:
    out = run_pass(snapshot(*cluster_objs()), AT, explain=True)
    assert out.facts is not None
    rows = {r.node: r for r in account_pass(out.facts)}
    assert rows["b"].reason == KeptReason.SETTLING and "1 terminating" in rows["b"].detail


# ---- pending pods while NodeClaims launch ------------------------------------------------------------------------
def launching_claim(name: str, created: datetime, *, deleting: bool = False) -> dict[str, Any]:
    """A NodeClaim launched for pending pods: no Node yet, not Initialized."""
    _, claim = node_and_claim(name, "m5.2xlarge", created=created,
                              conditions=[{"type": "Launched", "status": "True", "lastTransitionTime": ts(created)}])
    claim["status"].pop("nodeName")
    if deleting:
        claim["metadata"]["deletionTimestamp"] = ts(created)
    return claim


def scale_out_objs(*, waiting: str | None = "web-1", owner: str = "ReplicaSet",
                   claim: dict[str, Any] | None = None) -> list[Any]:
    """x stays; b's one pod fits on x, so consolidation would delete b; web-1 fits no Ready node and waits for l."""
    objs: list[Any] = [
        nodepool(consolidate_after="30s", requirements=[ON_DEMAND, TYPES]),
        node_and_claim("x", "m5.2xlarge"),
        pod("big-1", "x", cpu="4", memory="1Gi", annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"}),
        node_and_claim("b", "m5.xlarge"), pod("wb-1", "b", cpu="1", memory="1Gi"),
        claim or launching_claim("l", AT - timedelta(seconds=20))]
    if waiting:
        objs.append(pod(waiting, None, cpu="6", memory="1Gi", owner=owner, phase="Pending"))
    return objs


def test_without_the_launch_hold_consolidation_evicts_while_pods_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "settling", no_hold)  # the pass as it was: the scenario has a command
    out = run_pass(snapshot(*scale_out_objs()), AT)
    assert any(c.nodes == ["b"] for c in consolidations(out)), out.commands


def test_while_pods_wait_for_launching_claims_consolidation_waits() -> None:
    out = run_pass(snapshot(*scale_out_objs()), AT, explain=True)
    assert not consolidations(out), out.commands
    assert out.settling == Settling(launching=1, waiting=1)
    assert "1 pending pod(s) to land while 1 NodeClaim(s) launch" in out.settling.message()
    assert out.facts is not None
    row = {r.node: r for r in account_pass(out.facts)}["b"]
    assert row.reason == KeptReason.SETTLING and "NodeClaim(s) launch" in row.detail


@pytest.mark.parametrize("case", ["no pod waits", "daemonset pod", "claim too old", "claim deleting",
                                  "claim initialized"])
def test_the_launch_hold_needs_a_young_launch_and_a_pod_that_waits(case: str) -> None:
    objs = {
        "no pod waits": lambda: scale_out_objs(waiting=None),
        "daemonset pod": lambda: scale_out_objs(owner="DaemonSet"),
        "claim too old": lambda: scale_out_objs(
            claim=launching_claim("l", AT - timedelta(seconds=LAUNCH_HOLD_SECONDS + 1))),
        "claim deleting": lambda: scale_out_objs(claim=launching_claim("l", AT, deleting=True)),
        "claim initialized": lambda: scale_out_objs(claim=node_and_claim("l", "m5.2xlarge", created=AT)[1]),
    }[case]()
    cluster = Cluster.from_snapshot(snapshot(*objs))
    assert not settling(cluster, set(), AT).held
    assert any(c.nodes == ["b"] for c in consolidations(run_pass(snapshot(*objs), AT)))


def test_evicted_and_launch_holds_are_both_named() -> None:
    both = Settling(terminating=2, displaced=1, launching=3, waiting=4)
    assert both.held and both.message() == (
        "consolidation waits for the pods of in-flight disruptions to settle (2 terminating, 1 displaced and unbound)"
        " and for 4 pending pod(s) to land while 3 NodeClaim(s) launch")
