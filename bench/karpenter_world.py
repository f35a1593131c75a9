"""The stack of bench/karpenter_suite.py: the soak's world (Temporal dev server, moto_server with the demo's VPC
and images, the simulator, one `python worker.py` process) holding only an EC2NodeClass and one NodePool
shaped like the one Karpenter's performance suite creates, and the suite's workloads as ReplicaSets.
"""

from __future__ import annotations

from typing import Any, ClassVar

from api import labels as L
from api.instance_types.labels import CPU as INSTANCE_CPU_LABEL
from bench.karpenter_scenarios import Workload
from bench.soak_world import World
from devstack.demo_aws import node_class_object

POOL = "default"
SUITE_LABEL = "bench.nodeflow.dev/suite"
DRIFT_ANNOTATION = "bench.nodeflow.dev/drift-trigger"


def node_pool() -> dict[str, Any]:
    """Karpenter's suite NodePool: consolidate when empty or underutilized after 30 s, 100% budget, no limits,
    instance sizes below 32 vCPU. Karpenter's suite_test.go puts `Lt 32` on its KWOK provider's instance-size
    label; here it is `karpenter.k8s.aws/instance-cpu Lt 32`, which holds in every catalog (the bundled 48 types
    and the 1,366 the worker discovers, 736 of them of 32 vCPU or more), where naming the large types would not
    (tests/bench/test_karpenter_suite_setup.py)."""
    reqs = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
            {"key": INSTANCE_CPU_LABEL, "operator": "Lt", "values": ["32"]}]
    spec = {"requirements": reqs, "expireAfter": "720h", "terminationGracePeriod": "10m",
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    return {"apiVersion": L.API_VERSION, "kind": "NodePool", "metadata": {"name": POOL},
            "spec": {"template": {"metadata": {"labels": {"team": "perf"}}, "spec": spec},
                     "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s",
                                    "budgets": [{"nodes": "100%"}]}}}


def _constraints(w: Workload, match: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    spread = [(key, on) for key, on in ((L.ZONE_LABEL, w.zone_spread), (L.HOSTNAME_LABEL, w.hostname_spread)) if on]
    if spread:
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": match}} for key, _ in spread]
    if w.anti_affinity:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": L.HOSTNAME_LABEL, "labelSelector": {"matchLabels": match}}]}}
    return spec


def deployment(w: Workload) -> dict[str, Any]:
    """A workload as a Deployment, as Karpenter's suite makes them (the simulator's Deployment controller makes
    its ReplicaSet, whose controller creates, replaces and scales the pods)."""
    match = {"app": w.name, SUITE_LABEL: "unspecified"}
    annotations = {L.DO_NOT_DISRUPT_ANNOTATION: "true"} if w.do_not_disrupt else {}
    pod_spec = {"terminationGracePeriodSeconds": 30, **_constraints(w, match),
                "containers": [{"name": "main", "image": "registry.example/app:1",
                                "resources": {"requests": {"cpu": w.cpu, "memory": w.memory}}}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": w.name, "namespace": "default", "labels": {"app": w.name}},
            "spec": {"replicas": w.replicas, "selector": {"matchLabels": match},
                     "template": {"metadata": {"labels": match, "annotations": annotations}, "spec": pod_spec}}}


class SuiteWorld(World):
    """The soak's world with the suite's NodePool instead of the demo cluster; the simulator polls moto for
    instance states every second (at 0.25 s its DescribeInstances of hundreds of instances kept moto busy)."""

    ec2_poll_seconds: ClassVar[float] = 1.0

    def cluster_objects(self) -> list[dict[str, Any]]:
        return [node_class_object("default"), node_pool()]
