"""Karpenter's published Grafana dashboards have data after a short nodeflow run.

The names every panel of karpenter-capacity-dashboard.json and karpenter-performance-dashboard.json reads are
test data (data/karpenter_dashboard_metrics.txt, with where they came from). A worker runs against the
simulator and moto: a pending pod is provisioned (launch, registration, initialization), its ReplicaSet scales
to zero, the planner consolidates the empty node (a disruption decision, the NodeClaim disrupted, the node
drained and terminated). Then every name must have samples in the worker's registry (what /metrics serves),
and every counter, histogram and summary among them must have moved during the run, so a sample left by an
earlier test in the same process cannot pass for one. The state gauges are read while the node runs (an empty
cluster has none, in Karpenter too).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from e2e.termination_helpers import QUICK_WORKER
from kubernetes import client as k8s
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import labels
from bench.clusters import node_pool
from contracts.provisioning import PodRef, ProvisioningInput, ProvisioningPhase, ProvisioningSettings
from telemetry.metrics import REGISTRY
from workflows.provisioning import ProvisioningWorkflow

pytestmark = [pytest.mark.e2e]  # no shared fixture: any xdist worker (the "demo" group is for test_demo.py)
NAMES = Path(__file__).parent / "data" / "karpenter_dashboard_metrics.txt"
FAST = ProvisioningSettings(ready_timeout_seconds=30, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=2)
ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def dashboard_names() -> list[str]:
    lines = (line.strip() for line in NAMES.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def exported() -> dict[str, Any]:
    """The worker's exposition, by the name a dashboard selects (a counter's `_total`, a histogram's base name)."""
    out: dict[str, Any] = {}
    for family in text_string_to_metric_families(generate_latest(REGISTRY).decode()):
        name = family.name + "_total" if family.type == "counter" else family.name
        out[name] = family
    return out


def moved(family: Any) -> float:
    """What grows while a counter, histogram or summary records: its total, or its observation count."""
    if family.type == "counter":
        return sum(s.value for s in family.samples if s.name.endswith("_total"))
    return sum(s.value for s in family.samples if s.name.endswith("_count"))


def gauges_of(families: dict[str, Any]) -> list[str]:
    return [n for n in dashboard_names() if n in families and families[n].type == "gauge"]


def test_the_names_are_karpenters() -> None:
    names = dashboard_names()
    assert len(names) == len(set(names)) == 15
    assert all(n.startswith(("karpenter_", "controller_runtime_")) for n in names)


def _pending(api: Any) -> list[PodRef]:
    items = api.sanitize_for_serialization(k8s.CoreV1Api(api).list_namespaced_pod("default").items)
    return [PodRef(key=f"default/{p['metadata']['name']}", uid=p["metadata"]["uid"]) for p in items
            if any(c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get("conditions") or [])]


def _claims(api: Any) -> list[dict[str, Any]]:
    return k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]


def _true(obj: dict[str, Any], ctype: str) -> bool:
    return any(c.get("type") == ctype and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


async def test_every_dashboard_metric_is_exported_after_a_run(temporal_client, sim_ec2, moto_endpoint) -> None:
    names = dashboard_names()
    before = {n: moved(f) for n, f in exported().items() if n in names}
    pool = node_pool("default", requirements=ON_DEMAND, consolidate_after="0s")
    pool["spec"]["limits"] = {"cpu": "1000", "memory": "1000Gi"}
    sim_ec2.load_objects(fresh([pool, replica_set("web", 1, "500m")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        refs = await wait_for(lambda: (r := _pending(stack.api)) and r, what="the pending pod")
        handle = await stack.client.start_workflow(
            ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=FAST),
            id=f"provision-test-{uuid.uuid4()}", task_queue=stack.task_queue)
        assert (await handle.result()).outcome == ProvisioningPhase.SUCCEEDED
        claim = await wait_for(lambda: next((c for c in _claims(stack.api) if _true(c, "Initialized")), None),
                               timeout=30, what="an initialized NodeClaim")
        node_name = claim["status"]["nodeName"]
        # kube-scheduler binds the pod on its retry after the node is Ready (backoff up to 10 s, longer on a loaded
        # machine), then its kubelet starts it: 20 s was once too short under load
        await wait_for(lambda: "karpenter_pods_startup_duration_seconds" not in before
                       or moved(exported()["karpenter_pods_startup_duration_seconds"])
                       > before["karpenter_pods_startup_duration_seconds"], timeout=60, what="the pod's startup")
        during = exported()  # a node and its pod: the state gauges have something to describe
        k8s.AppsV1Api(stack.api).patch_namespaced_replica_set("web", "default", {"spec": {"replicas": 0}})
        await wait_for(lambda: any(_true(c, "Consolidatable") for c in _claims(stack.api)), timeout=20,
                       what="the claim Consolidatable")
        assert (await stack.planner_pass()).started, "the empty node was not consolidated"
        await wait_for(lambda: all(n["metadata"]["name"] != node_name for n in stack.nodes()), timeout=60,
                       what="the empty node terminated")
        counted = [n for n in names if n not in gauges_of(during)]
        # the Node is gone once its finalizer is; the metrics of that step follow it within the same activity
        await wait_for(lambda: all(moved(exported()[n]) > before.get(n, 0.0) for n in counted), timeout=20,
                       what="the run's counters and summaries recorded")
        after = exported()
    gauges = gauges_of(during)
    missing = [n for n in names if not (n in gauges and during[n].samples) and not (n in after and after[n].samples)]
    assert not missing, f"no samples for {missing}"
    still = [n for n in names if n not in gauges and moved(after[n]) <= before.get(n, 0.0)]
    assert not still, f"not recorded during the run: {still}"
    quantiles = {s.labels.get("quantile") for s in after["karpenter_nodes_termination_duration_seconds"].samples}
    assert {"0", "0.5", "0.9", "0.99", "1"} <= quantiles  # what the performance dashboard selects
    disrupted = [s.labels for s in after["karpenter_nodeclaims_disrupted_total"].samples
                 if s.name.endswith("_total") and s.labels.get("reason") == "empty"]
    assert disrupted and disrupted[0]["nodepool"] == "default" and disrupted[0]["capacity_type"] == "on-demand"
    node = next(s.labels for s in during["karpenter_nodes_allocatable"].samples if s.labels["node_name"] == node_name)
    assert node["nodepool"] == "default" and node["capacity_type"] == "on-demand" and node["zone"]
    web = [s.labels for s in during["karpenter_pods_state"].samples if s.labels["name"].startswith("web")]
    assert web and web[0]["node"] == node_name and web[0]["nodepool"] == "default"
