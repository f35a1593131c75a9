"""Starting provisioning batches: the pending-pod intake's one start path.

The id comes from the batch's pod uids (contracts/provisioning.batch_workflow_id) and the conflict policy is
USE_EXISTING, so a worker that restarts mid-batch and batches the same pods again joins the running workflow
instead of starting a second; a finished batch's id may run again (its pods are still pending: retry).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import (
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)

from contracts import search_attributes as sa
from contracts.provisioning import (
    PodRef,
    ProvisioningInput,
    ProvisioningPhase,
    ProvisioningSettings,
    batch_workflow_id,
)
from workflows import summaries
from workflows.provisioning import ProvisioningWorkflow

MEMO_PODS = "pods"  # uids of the batch's pods: the intake does not batch a pod a running provisioning covers
RUNNING_QUERY = "ExecutionStatus = 'Running' AND WorkflowType = 'ProvisioningWorkflow'"


async def start_provisioning(client: Client, pods: list[PodRef], task_queue: str = sa.TASK_QUEUE,
                             settings: ProvisioningSettings | None = None
                             ) -> WorkflowHandle[ProvisioningWorkflow, Any]:
    """Start (or join) the batch's ProvisioningWorkflow."""
    return await client.start_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=pods, settings=settings or ProvisioningSettings()),
        id=batch_workflow_id(pods), task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        memo={MEMO_PODS: sorted(p.uid for p in pods)},
        **summaries.pod_batch(pods).start_kwargs())


async def covered_pods(client: Client) -> set[str]:
    """Uids of the pods running ProvisioningWorkflows are still planning or launching for (Temporal visibility, memo
    `pods`). A batch waiting for its nodes to be Ready covers nothing: its NodeClaims exist, so a new batch counts
    them as capacity and nominates pods onto them, and a pod kube-scheduler left out of them is planned again
    at once, as Karpenter's next simulation would (docs/decisions.md §23)."""
    uids: set[str] = set()
    async for wf in client.list_workflows(RUNNING_QUERY):
        if wf.typed_search_attributes.get(sa.PHASE) == ProvisioningPhase.WAITING_READY:
            continue
        memo = await wf.memo()
        uids.update(memo.get(MEMO_PODS) or [])
    return uids
