"""The stack of bench/karpenter_suite.py: the soak's world (Temporal dev server, moto_server with the demo's VPC
and images, the simulator, one `python worker.py` process) holding only an EC2NodeClass and one NodePool
shaped like the one Karpenter's performance suite creates, and the suite's workloads as ReplicaSets.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import timedelta
from typing import Any

from api import labels as L
from bench.karpenter_scenarios import Workload
from bench.soak_world import AWS_ENV, World
from client.connection import connect
from devstack.demo_aws import DemoAws, node_class_object
from runtime.cloud_clients import ec2_client, iam_client, sqs_client
from simulator.server import Simulator
from workflows.nodeclass import NodeClassWorkflow
from workflows.nodeclass_models import NodeClassInput
from workflows.search_attributes import TASK_QUEUE

POOL = "default"
SUITE_LABEL = "bench.nodeflow.dev/suite"
DRIFT_ANNOTATION = "bench.nodeflow.dev/drift-trigger"


def node_pool() -> dict[str, Any]:
    """Karpenter's suite NodePool: consolidate when empty or underutilized after 30 s, 100% budget, no limits,
    instance sizes below 32 vCPU (m5.8xlarge is the catalog's only 32-vCPU type)."""
    reqs = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
            {"key": L.INSTANCE_TYPE_LABEL, "operator": "NotIn", "values": ["m5.8xlarge"]}]
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


def replica_set(w: Workload) -> dict[str, Any]:
    """A workload as a ReplicaSet (the simulator's controllers create, replace and scale its pods)."""
    match = {"app": w.name, SUITE_LABEL: "unspecified"}
    annotations = {L.DO_NOT_DISRUPT_ANNOTATION: "true"} if w.do_not_disrupt else {}
    pod_spec = {"terminationGracePeriodSeconds": 30, **_constraints(w, match),
                "containers": [{"name": "main", "image": "registry.example/app:1",
                                "resources": {"requests": {"cpu": w.cpu, "memory": w.memory}}}]}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": w.name, "namespace": "default", "labels": {"app": w.name}},
            "spec": {"replicas": w.replicas, "selector": {"matchLabels": match},
                     "template": {"metadata": {"labels": match, "annotations": annotations}, "spec": pod_spec}}}


class SuiteWorld(World):
    """The soak's world with the suite's NodePool instead of the demo cluster; the simulator polls moto for
    instance states every second (at 0.25 s its DescribeInstances of hundreds of instances kept moto busy)."""

    async def start(self) -> None:
        os.environ.update(AWS_ENV)
        (self.o.workdir / "temporal.db").unlink(missing_ok=True)
        await asyncio.gather(asyncio.to_thread(self.temporal.start), asyncio.to_thread(self.moto.start))
        self.ec2 = ec2_client("us-east-1", self.moto.endpoint)
        self.sqs = sqs_client("us-east-1", self.moto.endpoint)
        self.queue_url = self.sqs.create_queue(QueueName="nodeflow-perf")["QueueUrl"]
        await asyncio.to_thread(DemoAws(self.ec2, iam_client(self.moto.endpoint)).create)
        self.sim = Simulator(objects=[node_class_object("default"), node_pool()], ec2_endpoint=self.moto.endpoint,
                             time_scale=self.o.time_scale, ready_delay=self.o.ready_delay, ec2_poll_seconds=1.0,
                             kubeconfig_path=self.o.workdir / "kubeconfig")
        await asyncio.to_thread(self.sim.start)
        self.client = await connect(self.temporal.address, "default")
        self.start_worker()
        await self.wait_ready(120.0)
        await self.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(),
                                           id=f"nodeflow-nodeclass-start-{uuid.uuid4().hex[:8]}",
                                           task_queue=TASK_QUEUE, execution_timeout=timedelta(minutes=2))
