"""The cluster generator and the `nodeflow sim` commands."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime

import pytest
import yaml
from kubernetes import client
from support.sim_objects import wait_for

from api import labels as L
from api.nodepool import NodePool
from simulator.generate import generate_cluster
from simulator.server import Simulator
from starter.cli import run


def test_generated_cluster_is_realistic_and_deterministic() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    objs = generate_cluster(60, 12, seed=3, drift_fraction=0.2, empty_fraction=0.1, now=now)
    assert objs == generate_cluster(60, 12, seed=3, drift_fraction=0.2, empty_fraction=0.1, now=now)
    assert objs != generate_cluster(60, 12, seed=4, drift_fraction=0.2, empty_fraction=0.1, now=now)
    kinds = Counter(o["kind"] for o in objs)
    assert kinds["Node"] == kinds["NodeClaim"] == 60 and kinds["NodePool"] == 2
    assert kinds["DaemonSet"] == 2 and kinds["ReplicaSet"] > 5 and kinds["PodDisruptionBudget"] > 0
    for pool in (o for o in objs if o["kind"] == "NodePool"):
        NodePool.model_validate(pool)
    nodes = [o for o in objs if o["kind"] == "Node"]
    assert len({n["metadata"]["labels"][L.ZONE_LABEL] for n in nodes}) == 3
    assert len({n["metadata"]["labels"][L.INSTANCE_TYPE_LABEL] for n in nodes}) > 3
    assert {n["metadata"]["labels"][L.CAPACITY_TYPE_LABEL] for n in nodes} == {"spot", "on-demand"}
    pods = [o for o in objs if o["kind"] == "Pod"]
    on_node = Counter(p["spec"]["nodeName"] for p in pods if p["metadata"]["namespace"] != "kube-system")
    assert any(n["metadata"]["name"] not in on_node for n in nodes), "some empty nodes"
    assert any(p["metadata"].get("annotations", {}).get(L.DO_NOT_DISRUPT_ANNOTATION) == "true" for p in pods)
    claims = [o for o in objs if o["kind"] == "NodeClaim"]
    hashes = Counter(c["metadata"]["annotations"][L.TEMPLATE_HASH_ANNOTATION] for c in claims)
    drifted_by_condition = [c for c in claims if any(x["type"] == "Drifted" for x in c["status"]["conditions"])]
    assert len(hashes) > 2 or drifted_by_condition, "some drifted nodes"
    claim_names = {c["metadata"]["name"] for c in claims}
    assert all(c["status"]["nodeName"] in {n["metadata"]["name"] for n in nodes} for c in claims)
    assert all(n["metadata"]["ownerReferences"][0]["name"] in claim_names for n in nodes)
    assert len(pods) > 60 * 8


def test_generated_cluster_loads_and_settles(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "cluster.yaml"
    assert run(["sim", "generate", "--nodes", "20", "--pods-per-node", "10", "--seed", "1", "-o", str(path)]) == 0
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    with Simulator(scenario=path, time_scale=0.01) as sim:
        stats = sim.stats()
        assert stats["nodes"]["Ready"] == 20 and stats["pods"]["total"] == sum(d["kind"] == "Pod" for d in docs)
        assert stats["podsPending"] == 0
        api = sim.api_client()
        pdbs = client.PolicyV1Api(api).list_pod_disruption_budget_for_all_namespaces().items
        assert pdbs and all(p.status.expected_pods >= 1 for p in pdbs)
        api.close()
        wait_for(lambda: sim.stats()["pods"]["total"] == stats["pods"]["total"], what="controllers stay put")


def test_sim_command_runs_in_the_foreground(tmp_path) -> None:  # type: ignore[no-untyped-def]
    scenario = tmp_path / "c.yaml"
    scenario.write_text(yaml.safe_dump_all(generate_cluster(3, 4, seed=2)))
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "starter.cli", "sim", "-f", str(scenario), "--kubeconfig-out",
                             str(kubeconfig), "--time-scale", "0.01"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "simulator listening on http://127.0.0.1:" in line and "3 ready nodes" in line
        from kubernetes import config

        api = config.new_client_from_config(config_file=str(kubeconfig))
        assert len(client.CoreV1Api(api).list_node().items) == 3
        api.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_sim_command_reports_usage_errors(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert run(["sim"]) == 2
    assert "--kubeconfig-out" in capsys.readouterr().err
    assert run(["sim", "-f", str(tmp_path / "missing.yaml"), "--kubeconfig-out", str(tmp_path / "k")]) == 2
    assert "not found" in capsys.readouterr().err


def test_sim_scheduler_flags_choose_the_timing(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from simulator.scheduler_timing import SchedulerTiming
    from starter.cli import build_parser
    from starter.cmd_sim import scheduler_timing

    def timing(*flags: str) -> SchedulerTiming:
        return scheduler_timing(build_parser().parse_args(["sim", *flags]))

    assert timing() == SchedulerTiming()  # a real cluster's
    assert timing("--scheduler-retry-after", "90") == SchedulerTiming.slow(90.0)
    assert timing("--scheduler-instant") == SchedulerTiming.instant()
    assert timing("--scheduler-flush", "60", "--scheduler-bind-delay", "0") == SchedulerTiming(
        unschedulable_flush=60.0, bind_delay=0.0)
    assert run(["sim", "--kubeconfig-out", str(tmp_path / "k"), "--scheduler-flush", "-1"]) == 2
    assert "unschedulable_flush must not be negative" in capsys.readouterr().err
    assert run(["sim", "--kubeconfig-out", str(tmp_path / "k"), "--ready-jitter", "1.5"]) == 2
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sim", "--scheduler-instant", "--scheduler-retry-after", "5"])
