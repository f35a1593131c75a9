"""A NodePool's status end to end: the worker (run_worker) writes what Karpenter's nodepool controllers write, and
the allowed disruptions per reason, and `kubectl get nodepools -o wide` shows them.

The simulator serves the NodePool status subresource with the CRD's schema and prints the CRD's columns; the
worker's NodePool status controller (runtime/nodepool_status.py) is the only writer.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh, wait_for

from api.catalog import load_default_catalog
from bench.clusters import node_objects, node_pool
from devstack.binaries import find_binary
from planning.lifecycle.nodepool_status import ALLOWED_DISRUPTIONS_ANNOTATION, parse_allowed

pytestmark = [pytest.mark.e2e]  # no shared fixture: any xdist worker (the "demo" group is for test_demo.py)
KUBECTL = find_binary("kubectl")
BUDGETS = [{"nodes": "50%"}, {"nodes": "0", "reasons": ["Drifted"]}]
READY_CLASS = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
               "spec": {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
                        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}]},
               "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                                          "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def pool(api: Any) -> dict[str, Any]:
    return k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default")


def condition(obj: dict[str, Any], ctype: str) -> str:
    return next((c["status"] for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == ctype), "")


def allowed(obj: dict[str, Any]) -> dict[str, int]:
    return parse_allowed((obj["metadata"].get("annotations") or {}).get(ALLOWED_DISRUPTIONS_ANNOTATION, ""))


async def test_nodepool_status_shows_resources_nodes_conditions_and_allowed_disruptions(
        temporal_client, sim_ec2, moto_endpoint) -> None:
    types = ["m5.large", "m5.large", "m5.xlarge", "m5.xlarge"]
    objs = [READY_CLASS, node_pool("default", budgets=BUDGETS, consolidate_after="Never")]
    for i, t in enumerate(types):
        objs += node_objects(f"n{i}", t)
    sim_ec2.load_objects(fresh(objs))
    catalog = load_default_catalog()
    cpu = sum(float(catalog.get(t).cpu) for t in types)  # type: ignore[union-attr]
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        p = await wait_for(lambda: (o := pool(stack.api)).get("status", {}).get("nodes") == 4
                           and allowed(o) and o, timeout=30, what="status.nodes 4 and the allowed disruptions")
        status = p["status"]
        assert status["resources"]["nodes"] == "4" and float(status["resources"]["cpu"]) == cpu
        assert set(status["resources"]) >= {"cpu", "memory", "pods", "ephemeral-storage", "nodes"}
        assert {t: condition(p, t) for t in ("Ready", "NodeClassReady", "ValidationSucceeded")} == \
            {"Ready": "True", "NodeClassReady": "True", "ValidationSucceeded": "True"}
        assert condition(p, "NodeRegistrationHealthy") in ("Unknown", "True")
        # 50% of 4; Drifted blocked; node repair's Unhealthy (v1.15) appended
        assert allowed(p) == {"Empty": 2, "Drifted": 0, "Underutilized": 2, "Unhealthy": 2}

        # A disruption marks a node: it leaves status.resources and counts as disrupting in the budget.
        k8s.CoreV1Api(stack.api).patch_node("n0", {"spec": {"taints": [
            {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}})
        p = await wait_for(lambda: (o := pool(stack.api))["status"]["nodes"] == 3 and allowed(o)["Empty"] == 1
                           and o, timeout=30, what="the marked node out of the counts")
        assert allowed(p) == {"Empty": 1, "Drifted": 0, "Underutilized": 1, "Unhealthy": 1}

        if KUBECTL is not None:
            out = subprocess.run([KUBECTL, "--kubeconfig", sim_ec2.kubeconfig_path, "get", "nodepools", "-o", "wide"],
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            header, row = out.stdout.splitlines()[:2]
            assert header.split()[:5] == ["NAME", "NODECLASS", "NODES", "READY", "AGE"]
            assert row.split()[:4] == ["default", "default", "3", "True"]
            assert row.split()[-1] == "Empty=1,Drifted=0,Underutilized=1,Unhealthy=1"


def claim_drift(api: Any) -> dict[str, str]:
    items = k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
    return {c["metadata"]["name"]: next((x["reason"] for x in c["status"].get("conditions") or []
                                         if x["type"] == "Drifted" and x["status"] == "True"), "") for c in items}


async def test_requirements_drift_is_written_on_the_claims_and_cleared_when_reverted(
        temporal_client, sim_ec2, moto_endpoint) -> None:
    objs: list[dict[str, Any]] = [READY_CLASS, node_pool("default", consolidate_after="Never")]
    objs += node_objects("n0", "m5.large") + node_objects("n1", "m5.xlarge")
    sim_ec2.load_objects(fresh(objs))
    custom = k8s.CustomObjectsApi(sim_ec2.api_client())

    def requirements(reqs: list[dict[str, Any]]) -> None:
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default",
                                           {"spec": {"template": {"spec": {"requirements": reqs}}}})

    base = node_pool("default")["spec"]["template"]["spec"]["requirements"]
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        await wait_for(lambda: pool(stack.api).get("status", {}).get("nodes") == 2, timeout=30, what="counted")
        assert set(claim_drift(stack.api).values()) == {""}
        requirements([*base, {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]}])
        drift = await wait_for(lambda: (d := claim_drift(stack.api))["n0-claim"] and d, timeout=30,
                               what="n0's claim Drifted")
        assert drift == {"n0-claim": "RequirementsDrifted", "n1-claim": ""}
        requirements(base)
        await wait_for(lambda: set(claim_drift(stack.api).values()) == {""}, timeout=30, what="Drifted cleared")


async def test_a_missing_node_class_makes_the_pool_not_ready(temporal_client, sim_ec2, moto_endpoint) -> None:
    sim_ec2.load_objects(fresh([node_pool("default", consolidate_after="Never")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        p = await wait_for(lambda: condition(o := pool(stack.api), "Ready") and o, timeout=30, what="Ready written")
        assert condition(p, "NodeClassReady") == "False" and condition(p, "Ready") == "False"
        reason = next(c["reason"] for c in p["status"]["conditions"] if c["type"] == "NodeClassReady")
        assert reason == "NodeClassNotFound"
        assert p["status"]["nodes"] == 0 and p["status"]["resources"]["cpu"] == "0"
