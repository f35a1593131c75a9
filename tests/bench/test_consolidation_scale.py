"""bench.consolidation_scale is what it claims: a steady-state cluster of the pool's one type, every Deployment
scaled in by 30%, a lower bound computed from the requests of the pods kept, and a report of the figures the issue
asks for. The live run is checked at 4 nodes with a short limit (the stack, the scale-in through the API, the
sampling), not for reaching the bound, which takes the planner's timers (consolidateAfter 30 s and more)."""

from __future__ import annotations

import json
import math
from collections import Counter

from api.quantity import parse_cpu
from bench.consolidation_scale import main, peak_cores
from bench.consolidation_scale_cluster import (
    FILL,
    INSTANCE_TYPE,
    deployments,
    lower_bound,
    scale_in_snapshot,
    scaled_in,
    steady_state,
)
from bench.karpenter_world import SUITE_LABEL
from bench.packing_problem import pod_requests


def _kind(objs: list[dict], kind: str) -> list[dict]:
    return [o for o in objs if o["kind"] == kind]


def test_the_steady_state_fills_every_node_of_the_one_type_with_deployment_pods() -> None:
    objs = steady_state(30, seed=3)
    nodes = _kind(objs, "Node")
    assert len(nodes) == 30 and {n["metadata"]["labels"]["node.kubernetes.io/instance-type"] for n in nodes} == {
        INSTANCE_TYPE}
    (pool,) = _kind(objs, "NodePool")
    assert pool["spec"]["disruption"]["budgets"] == [{"nodes": "10%"}]
    apps = [p for p in _kind(objs, "Pod") if SUITE_LABEL in p["metadata"]["labels"]]
    used = Counter()
    for p in apps:
        used[p["spec"]["nodeName"]] += pod_requests(p)[0]
    cpu = parse_cpu(nodes[0]["status"]["allocatable"]["cpu"]) * 1000
    assert set(used) == {n["metadata"]["name"] for n in nodes}
    assert all(cpu * FILL - 550 <= m <= cpu * FILL for m in used.values())  # full to within the largest pod
    assert sum(deployments(objs).values()) == len(apps)
    assert len(_kind(objs, "PodDisruptionBudget")) == len(deployments(objs))


def test_the_scale_in_removes_30_percent_of_every_deployment() -> None:
    replicas = {"a": 10, "b": 7, "c": 1, "d": 45}
    kept = scaled_in(replicas)
    assert kept == {"a": 7, "b": 5, "c": 1, "d": 31}
    objs = steady_state(40, seed=5)
    before = deployments(objs)
    after = scale_in_snapshot(objs)
    pods = Counter(p["metadata"]["labels"]["app"] for p in _kind(after, "Pod")
                   if SUITE_LABEL in p["metadata"]["labels"])
    assert dict(pods) == scaled_in(before)
    assert abs(sum(pods.values()) / sum(before.values()) - 0.7) < 0.02
    assert len(_kind(after, "Node")) == 40  # the nodes stay: consolidation removes them


def test_the_lower_bound_is_the_pods_requests_over_a_nodes_room() -> None:
    objs = scale_in_snapshot(steady_state(20, seed=7))
    pods, node = _kind(objs, "Pod"), _kind(objs, "Node")[0]
    bound = lower_bound(pods, node)
    apps = [p for p in pods if SUITE_LABEL in p["metadata"]["labels"]]
    agent = [p for p in pods if p["spec"]["nodeName"] == node["metadata"]["name"] and
             SUITE_LABEL not in p["metadata"]["labels"]]
    room = parse_cpu(node["status"]["allocatable"]["cpu"]) * 1000 - sum(pod_requests(p)[0] for p in agent)
    assert bound.by_resource["cpu"] == math.ceil(sum(pod_requests(p)[0] for p in apps) / room)
    assert bound.nodes == max(bound.by_resource.values()) and bound.near == math.floor(bound.nodes * 1.1)
    assert bound.nodes < 20  # the scale-in left room to consolidate


def test_peak_cores_is_the_busiest_window() -> None:
    rows = [(float(t), 0.0, cpu) for t, cpu in enumerate([0, 0.1, 0.2, 1.2, 2.2, 2.3, 2.4, 2.5])]
    assert peak_cores(rows, 0, 10, window=2.0) == 1.0
    assert peak_cores(rows, 5, 10, window=2.0) == 0.1


def test_decision_only_prints_a_pass_per_size_beside_karpenters_figures(capsys) -> None:
    assert main(["--decision-only", "--sizes", "10,30", "--runs", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["nodes"] for r in rows] == [10, 30]
    assert all(r["passCpuSecondsP50"] > 0 and r["commands"] for r in rows)  # scaled in: something to consolidate
    assert all(r["allMethodsCpuSecondsP50"] > 0 for r in rows)
    assert main(["--decision-only", "--sizes", "10", "--runs", "1"]) == 0
    assert "kubernetes-sigs/karpenter#3271" in capsys.readouterr().out


def test_a_short_live_run_scales_in_through_the_api_and_reports_every_figure(capsys, monkeypatch) -> None:
    monkeypatch.setenv("NODEFLOW_NO_INSTANCE_TYPE_DISCOVERY", "1")  # the bundled catalog has m5.xlarge: no wait for it
    assert main(["--nodes", "4", "--limit", "2", "--quiet", "60", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["nodesBefore"] == 4 and r["replicasAfter"] == sum(
        max(1, n - round(n * 0.3)) for n in deployments(steady_state(4)).values())
    assert r["replicasAfter"] < r["replicasBefore"] and r["podsHealthy"] <= r["replicasAfter"]
    assert 1 <= r["bound"] <= 4 and r["stopped"] in ("limit", "within 10%", "quiet") and r["scaleInSeconds"] > 0
    # a 2 s window may hold a single CPU sample under load (an average of 0.0): the figures are there and not negative
    worker = r["processes"]["worker"]
    assert worker["avgCpuCores"] >= 0 and worker["peakCpuCores"] >= 0 and r["processes"]["temporal"]["cpuSeconds"] >= 0
    assert set(r["commands"]) >= {"decisions", "validations", "outcomes", "plannerPasses", "passSecondsMean"}
    assert r["pdbViolations"] == 0 and len(r["loadAverage"]["start"]) == 3
