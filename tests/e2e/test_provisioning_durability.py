"""Durability: the worker process is SIGKILLed while a provisioning batch is under way; a new worker takes over.

Every pod ends Running, and no NodeClaim got a second instance and no pod a second NodeClaim: each NodeClaim has
exactly one instance, and the NodeClaims are as many as the new nodes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from support.disruption_stack import fresh, replica_set, wait_for
from temporalio.client import Client

from api import labels
from bench.clusters import node_pool
from runtime.cloud_clients import ec2_client

pytestmark = pytest.mark.e2e  # any xdist worker: the "demo" group is test_demo.py's shared run (and the disruption e2e)
ROOT = Path(__file__).resolve().parents[2]


def _spawn(client: Client, sim: Any, moto_endpoint: str, tq: str, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, str(ROOT / "worker.py"), "--address", client.service_client.config.target_host,
           "--kubeconfig", sim.kubeconfig_path, "--ec2-endpoint", moto_endpoint, "--task-queue", tq,
           "--ami-id", sim.world.ec2.image_id(), "--no-watch", "--batch-idle-duration", "0.5",
           "--launch-timeout", "10s",  # the killed launch is retried after this (default 1m, waited out)
           "--no-instance-type-discovery",  # the bundled catalog: 1,000+ types discovered per start cost CPU seconds
           "--sticky-queue-timeout", "1s"]  # the killed worker's cached workflows move on after 1 s, not 10 s
    env = dict(os.environ, PYTHONPATH=str(ROOT), NODEFLOW_PLANNER_SECONDS="3600")
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))


def _claims(api: Any) -> list[dict[str, Any]]:
    return k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]


def _running(api: Any) -> int:
    pods = k8s.CoreV1Api(api).list_namespaced_pod("default", label_selector="app=web").items
    return sum(1 for p in pods if p.status.phase == "Running" and p.spec.node_name)


async def test_worker_sigkill_mid_provisioning_launches_nothing_twice(temporal_client: Client, sim_ec2: Any,
                                                                      moto_endpoint: str, tmp_path: Path) -> None:
    reqs = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]  # one pod per node
    sim_ec2.load_objects(fresh([node_pool("default", requirements=reqs, consolidate_after="Never"),
                                replica_set("web", 4, "1500m")]))
    api = sim_ec2.api_client()
    ec2 = ec2_client("us-east-1", moto_endpoint)
    tq = f"tq-provision-{os.getpid()}-{id(api)}"
    first = _spawn(temporal_client, sim_ec2, moto_endpoint, tq, tmp_path / "worker-1.log")
    second = None
    try:
        await wait_for(lambda: len(_claims(api)) >= 1, timeout=60, interval=0.02, what="a NodeClaim launching")
        first.kill()  # SIGKILL mid-batch: launches and the readiness wait die with it
        first.wait(10)
        second = _spawn(temporal_client, sim_ec2, moto_endpoint, tq, tmp_path / "worker-2.log")
        await wait_for(lambda: _running(api) == 4, timeout=180, what="4 web pods running")
        claims = _claims(api)
        assert len(claims) == 4, [c["metadata"]["name"] for c in claims]  # one m5.large per pod, none twice
        for c in claims:
            resp = ec2.describe_instances(Filters=[{"Name": "tag:karpenter.sh/nodeclaim",
                                                    "Values": [c["metadata"]["name"]]}])
            instances = [i for r in resp["Reservations"] for i in r["Instances"]]
            assert len(instances) == 1, (c["metadata"]["name"], [i["InstanceId"] for i in instances])
        await asyncio.sleep(2)  # a second intake pass over the now-running pods starts nothing more
        assert len(_claims(api)) == 4
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(10)
        api.close()
