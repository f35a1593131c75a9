"""starter/demo_capacity.py: the demo's scale-up and re-homed expiration, judged by where the pods run, and the
bundled scenario that makes both need new nodes."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

from api import labels as L
from api.quantity import parse_cpu
from devstack.demo_scenario import demo_cluster
from simulator.server import Simulator
from starter.demo_capacity import REHOMED_APP, REHOMED_POOL, SCALE_UP_APP, Rehoming, ScaleUp, scale_up, watch_rehoming


class _Cluster:
    """The two reads the moments make (pods of an app, node names), as the Kubernetes client returns them."""

    def __init__(self) -> None:
        self.pods: list[dict[str, Any]] = []
        self.nodes: list[str] = []

    def pod(self, app: str, name: str, node: str | None) -> None:
        self.pods.append({"metadata": {"name": name, "labels": {"app": app}},
                          "spec": {"nodeName": node} if node else {},
                          "status": {"phase": "Running" if node else "Pending"}})

    def list_namespaced_pod(self, namespace: str, label_selector: str, _preload_content: bool) -> Any:
        app = label_selector.removeprefix("app=")
        items = [p for p in self.pods if p["metadata"]["labels"]["app"] == app]
        return SimpleNamespace(data=json.dumps({"items": items}).encode())

    def list_node(self, _preload_content: bool) -> Any:
        return SimpleNamespace(data=json.dumps({"items": [{"metadata": {"name": n}} for n in self.nodes]}).encode())


def test_a_scale_up_is_done_when_every_added_pod_runs_and_counts_the_new_nodes_then() -> None:
    c = _Cluster()
    c.nodes = ["spot-1", "spot-2"]
    c.pod("crawler", "crawler-1", "spot-1")
    moment = ScaleUp(app="crawler", replicas=(1, 3), at_seconds=20.0, pods_before={"crawler-1"},
                     nodes_before={"spot-1", "spot-2"})
    c.pod("crawler", "crawler-2", None)
    c.pod("crawler", "crawler-3", None)
    assert moment.observe(c) == [] and "0/2 new pods Running" in moment.note()
    c.nodes.append("spot-abc")
    c.pods[1:] = []
    c.pod("crawler", "crawler-2", "spot-abc")
    c.pod("crawler", "crawler-3", "spot-2")  # room freed on an old node: not new capacity
    (line,) = moment.observe(c)
    assert "all 2 new crawler pods Running" in line and "on 1 new node(s)" in line
    report = moment.report()
    assert (report["replicasBefore"], report["replicasAfter"], report["podsAddedRunning"], report["newNodes"]) == \
        (1, 3, 2, 1)
    c.pods[1]["spec"]["nodeName"] = "spot-later"  # moved later (an interruption): the count stays as it was
    assert moment.observe(c) == [] and moment.report()["newNodes"] == 1


def test_rehoming_is_done_when_the_expired_nodes_are_gone_and_every_pod_runs_on_a_new_node() -> None:
    c = _Cluster()
    c.nodes = ["batch-1", "batch-2", "general-1"]
    moment = Rehoming(original_nodes={"batch-1", "batch-2"}, initial_nodes=set(c.nodes), replicas=2)
    c.pod(REHOMED_APP, "r-1", "batch-1")
    c.pod(REHOMED_APP, "r-2", None)
    assert moment.observe(c) == [] and moment.report()["rehomedAfterSeconds"] is None
    c.nodes = ["general-1", "batch-new"]
    c.pods = []
    c.pod(REHOMED_APP, "r-1", "batch-new")
    c.pod(REHOMED_APP, "r-2", "batch-new")
    (line,) = moment.observe(c)
    assert "all 2 reports pods of the 2 expired batch nodes Running on 1 new node(s)" in line
    report = moment.report()
    assert (report["expiredNodesGone"], report["podsOnNewNodes"], report["newNodes"]) == (2, 2, 1)
    assert report["rehomedAfterSeconds"] is not None


def _room(objs: list[dict[str, Any]], node: dict[str, Any]) -> float:
    """Free cpu on a node of the scenario."""
    name = node["metadata"]["name"]
    used = sum(parse_cpu(c["resources"]["requests"]["cpu"]) for o in objs if o["kind"] == "Pod"
               and o["spec"]["nodeName"] == name for c in o["spec"]["containers"])
    return parse_cpu(node["status"]["allocatable"]["cpu"]) - used


def test_the_scenario_makes_the_scale_up_and_the_expired_pods_need_new_nodes() -> None:
    objs = demo_cluster()
    rs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Deployment"}
    crawler = rs[SCALE_UP_APP]["spec"]["template"]["spec"]
    assert crawler["nodeSelector"] == {L.CAPACITY_TYPE_LABEL: "spot"}
    reports = rs[REHOMED_APP]["spec"]["template"]["spec"]
    assert reports["nodeSelector"] == {L.NODEPOOL_LABEL: REHOMED_POOL}
    nodes = [o for o in objs if o["kind"] == "Node"]
    spot = [n for n in nodes if n["metadata"]["labels"][L.CAPACITY_TYPE_LABEL] == "spot"]
    need = parse_cpu(crawler["containers"][0]["resources"]["requests"]["cpu"])
    assert spot and all(_room(objs, n) < need for n in spot)  # no spot node has room for another crawler
    batch = [n for n in nodes if n["metadata"]["labels"][L.NODEPOOL_LABEL] == REHOMED_POOL]
    pool = next(o for o in objs if o["kind"] == "NodePool" and o["metadata"]["name"] == REHOMED_POOL)
    assert batch and pool["spec"]["template"]["spec"]["expireAfter"] == "24h"  # the nodes are three days old


def test_the_scale_up_scales_the_deployment_that_the_simulator_adopted_without_a_rollout() -> None:
    """The scenario's ReplicaSets are the ones the Deployment controller would make: loading it rolls nothing
    out, and the scale-up goes through the Deployment to its ReplicaSet's pods."""
    from kubernetes import client

    with Simulator(objects=demo_cluster(), time_scale=0.01, ready_delay=0.5) as sim:
        api = sim.api_client()
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        rs_before = {r.metadata.name for r in apps.list_namespaced_replica_set("default").items}
        moment = scale_up(core, 20.0)
        assert moment is not None and moment.replicas == (8, 12)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            crawler = core.list_namespaced_pod("default", label_selector=f"app={SCALE_UP_APP}").items
            if len(crawler) == 12:
                break
            time.sleep(0.05)
        assert len(crawler) == 12 and {p.metadata.owner_references[0].name for p in crawler} == {
            moment.replica_set}
        assert {r.metadata.name for r in apps.list_namespaced_replica_set("default").items} == rs_before
        assert moment.report()["deployment"] == f"default/{SCALE_UP_APP}"
        nodes = [n.to_dict() | {"metadata": {"name": n.metadata.name, "labels": n.metadata.labels}}
                 for n in core.list_node().items]
        rehoming = watch_rehoming(core, nodes)
        assert rehoming is not None and rehoming.replicas == 6
        assert rehoming.report()["replicaSet"].startswith(f"default/{REHOMED_APP}-")
        api.close()
