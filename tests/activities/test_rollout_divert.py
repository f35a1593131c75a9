"""A planner pass and drift waves: drift of a pool whose DisruptionPolicy has `drift.waves` becomes that pool's
rollout (one per pool and generation), other commands stay; every pool's hooks ride along with its commands.
The rollout's own planning sees the pool's drifted nodes and the workloads a wave displaces."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from activities.planning_runner import node_index, to_command
from activities.rollout import _plan_pool
from activities.rollout_divert import divert_drift
from api import labels
from api.snapshot import Snapshot
from bench.clusters import node_objects, node_pool
from planning.planner.plan import plan

NOW = datetime.now(UTC)


def _objs(policy_spec: dict | None) -> list[dict]:
    objs = [node_pool("general", budgets=[{"nodes": "2"}], consolidate_after="Never")]
    for i in range(3):
        objs += node_objects(f"old-{i}", "m5.large", pool="general",
                             annotations={labels.TEMPLATE_HASH_ANNOTATION: "stale"})
    objs += node_objects("spare", "m5.xlarge", pool="general")
    for o in objs:
        if o["kind"] in ("Node", "NodeClaim"):
            o["metadata"]["creationTimestamp"] = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "api-1", "namespace": "default", "uid": "uid-api-1",
        "ownerReferences": [{"kind": "ReplicaSet", "name": "api", "uid": "uid-rs-api", "controller": True}]},
        "spec": {"nodeName": "old-0", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {"phase": "Running"}})
    if policy_spec is not None:
        objs.append({"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy",
                     "metadata": {"name": "waves"}, "spec": {"nodePools": ["general"], **policy_spec}})
    return objs


def _commands(objs: list[dict]) -> list:
    result = plan(Snapshot.from_objects(objs), NOW)
    index = node_index(objs)
    return [to_command(c, index) for c in result.commands]


def test_drift_of_a_wave_pool_becomes_its_rollout() -> None:
    objs = _objs({"drift": {"waves": [1, "100%"], "bakeTime": "30m"},
                  "hooks": {"notify": {"url": "http://n/x"}}})
    cmds = _commands(objs)
    assert cmds and all(c.method == "Drift" for c in cmds)
    kept, controls, rollouts = divert_drift(SimpleNamespace(objs=objs, snapshot=None), cmds)
    assert kept == []
    assert [r.node_pool for r in rollouts] == ["general"] and rollouts[0].waves.bake_seconds == 1800
    assert rollouts[0].generation and rollouts[0].workflow_id.startswith("rollout-general-")
    assert controls["general"].notify_url == "http://n/x" and rollouts[0].controls == controls["general"]


def test_without_waves_drift_stays_a_command_with_its_controls() -> None:
    objs = _objs({"hooks": {"preDisruption": {"url": "http://h/x", "ack": "Required", "ackTimeout": "5m"}}})
    cmds = _commands(objs)
    kept, controls, rollouts = divert_drift(SimpleNamespace(objs=objs, snapshot=None), cmds)
    assert kept == cmds and rollouts == []
    assert controls["general"].pre_disruption.ack_timeout_seconds == 300


def test_no_policy_changes_nothing() -> None:
    objs = _objs(None)
    cmds = _commands(objs)
    assert divert_drift(SimpleNamespace(objs=objs, snapshot=None), cmds) == (cmds, {}, [])


def test_rollout_plan_counts_drifted_nodes_and_names_displaced_workloads() -> None:
    objs = _objs(None)
    read = SimpleNamespace(objs=objs, snapshot=None, parsed=None, excluded={"old-2"}, index=node_index(objs))
    out = _plan_pool(read, None, "general", limit=1, at=NOW)
    assert out.drifted == 2, "old-2 is excluded (already being disrupted)"
    assert len(out.commands) == 1 and len(out.commands[0].nodes) == 1
    if out.commands[0].nodes[0].name == "old-0":
        assert [(w.kind, w.name) for w in out.workloads] == [("ReplicaSet", "api")]


def test_a_pass_whose_drift_went_to_a_rollout_drifts_the_other_pools() -> None:
    """Drift plans one command per pass, oldest drift first: the wave pool's nodes must not shadow another pool's."""
    from activities.planning_runner import ClusterRead, PlanningActivities
    from contracts.disruption import PlanPassInput, PlanPassResult

    objs = _objs({"drift": {"waves": [1, "100%"]}})
    objs.append(node_pool("plain", budgets=[{"nodes": "1"}], consolidate_after="Never"))
    objs += node_objects("plain-old", "m5.large", pool="plain", annotations={labels.TEMPLATE_HASH_ANNOTATION: "x"})
    objs += node_objects("plain-spare", "m5.xlarge", pool="plain")
    for o in objs:  # the plain pool's node drifted last: a single pass picks the wave pool's
        if o["kind"] in ("Node", "NodeClaim") and o["metadata"]["name"].startswith("plain"):
            o["metadata"]["creationTimestamp"] = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
        elif o["kind"] in ("Node", "NodeClaim"):
            o["metadata"]["creationTimestamp"] = (NOW - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    read = ClusterRead(objs, node_index(objs), set(), set(), [])
    out = PlanPassResult()
    out.commands, out.policies, out.rollouts = divert_drift(read, _commands(objs))
    assert out.commands == [] and [r.node_pool for r in out.rollouts] == ["general"]
    again = PlanningActivities(kube=None)._plan_besides_rollouts(read, PlanPassInput(at=NOW), out)
    assert [(c.method, c.node_pool, [n.name for n in c.nodes]) for c in again] == [("Drift", "plain", ["plain-old"])]
