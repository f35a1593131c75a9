"""What the soak measures every few seconds: the worker's RSS, the history of the long-running workflows, pods
pending, nodes, workflows running; and which instance each Node and NodeClaim ran on (for runs per machine).

Long-running workflows: the interruption poller (one id forever, continue-as-new every `polls_per_run` polls)
and the Temporal Schedules' own scheduler workflows (`temporal-sys-scheduler:<schedule id>`), which start a
planner pass every 10 s and a node-class resolution every minute. Planner, provisioning, disruption and
termination runs are short; their longest histories are read once at the end from visibility.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from temporalio.client import Client

from api.provider_id import instance_id_from_provider_id
from bench.soak_churn import retry
from client.interruption import poller_workflow_id
from client.nodeclass_schedule import NODECLASS_SCHEDULE_ID
from client.planner_schedule import PLANNER_SCHEDULE_ID
from contracts.search_attributes import TASK_QUEUE

LONG_RUNNING = {"poller": poller_workflow_id(TASK_QUEUE),
                "plannerScheduler": f"temporal-sys-scheduler:{PLANNER_SCHEDULE_ID}",
                "nodeclassScheduler": f"temporal-sys-scheduler:{NODECLASS_SCHEDULE_ID}"}


def rss_mib(pid: int) -> float:
    """Resident set size of a process now, MiB (0 once it is gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


async def history(client: Client, workflow_id: str) -> dict[str, Any] | None:
    """The current run's history length and size, and its run id (a new one after continue-as-new)."""
    try:
        desc = await client.get_workflow_handle(workflow_id).describe()
    except Exception:  # not started yet, or a server that hides it
        return None
    info = desc.raw_description.workflow_execution_info
    return {"events": info.history_length, "bytes": info.history_size_bytes, "runId": desc.run_id}


async def running(client: Client) -> Counter[str]:
    return Counter([w.workflow_type async for w in client.list_workflows("ExecutionStatus='Running'")])


def cluster_counts(api: Any, machines: dict[str, str]) -> dict[str, int]:
    """Nodes, NodeClaims and pods pending now; records `kind/name -> instance id` of every Node and NodeClaim."""
    core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
    nodes = api.sanitize_for_serialization(retry(core.list_node).items)
    claims = retry(custom.list_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims")["items"]
    for kind, objs in (("node", nodes), ("nodeclaim", claims)):
        for o in objs:
            pid = (o.get("spec") or {}).get("providerID") or (o.get("status") or {}).get("providerID")
            iid = instance_id_from_provider_id(pid)
            if iid:
                machines[f"{kind}/{o['metadata']['name']}"] = iid
    pods = retry(core.list_pod_for_all_namespaces).items
    pending = sum(1 for p in pods if p.status.phase == "Pending" and not p.metadata.deletion_timestamp)
    return {"nodes": len(nodes), "nodeClaims": len(claims), "podsPending": pending, "pods": len(pods),
            "nodesDeleting": sum(1 for n in nodes if n["metadata"].get("deletionTimestamp"))}


async def sample(client: Client, api: Any, worker_pid: int, started: float,
                 machines: dict[str, str]) -> dict[str, Any]:
    """One row of the time series."""
    row: dict[str, Any] = {"t": round(time.monotonic() - started, 1), "workerRssMiB": rss_mib(worker_pid)}
    for name, wid in LONG_RUNNING.items():
        row[name] = await history(client, wid)
    row.update(cluster_counts(api, machines))
    row["running"] = dict(await running(client))
    return row
