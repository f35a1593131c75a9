"""Starting provisioning batches: the pending-pod intake's one start path.

The id comes from the batch's pod uids (contracts/provisioning.batch_workflow_id) and the conflict policy is
USE_EXISTING, so a worker that restarts mid-batch and batches the same pods again joins the running workflow
instead of starting a second; a finished batch's id may run again (its pods are still pending: retry).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowExecution, WorkflowHandle
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

MEMO_PODS = "pods"  # runs started before 2026-12-01 (night) listed their pods' uids here; newer ones have no memo
RUNNING_QUERY = "ExecutionStatus = 'Running' AND WorkflowType = 'ProvisioningWorkflow'"


async def start_provisioning(client: Client, pods: list[PodRef], task_queue: str = sa.TASK_QUEUE,
                             settings: ProvisioningSettings | None = None
                             ) -> WorkflowHandle[ProvisioningWorkflow, Any]:
    """Start (or join) the batch's ProvisioningWorkflow. Its pods are in its input alone: a memo that listed them
    too (~40 bytes a pod) went over Temporal's 2 KiB memo warning size at 50 pods, a warning on every batch."""
    return await client.start_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=pods, settings=settings or ProvisioningSettings()),
        id=batch_workflow_id(pods), task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        **summaries.pod_batch(pods).start_kwargs())


class CoveredPods:
    """Uids of the pods running ProvisioningWorkflows are still planning or launching for. A batch waiting for its
    nodes to be Ready covers nothing: its NodeClaims exist, so a new batch counts them as capacity and nominates
    pods onto them, and a pod kube-scheduler left out of them is planned again at once, as Karpenter's next
    simulation would (docs/decisions.md §23).

    Which batches run is Temporal's (visibility); which pods each holds is what this process started it with
    (`started`), else read once from its started event's input (a batch a previous leader or the CapacityBuffer
    controller started; the memo of runs older than that), then kept while the batch runs."""

    def __init__(self) -> None:
        self._uids: dict[str, frozenset[str]] = {}  # workflow id -> its pods' uids

    def started(self, workflow_id: str, pods: list[PodRef]) -> None:
        self._uids[workflow_id] = frozenset(p.uid for p in pods)

    async def read(self, client: Client) -> set[str]:
        uids: set[str] = set()
        running: set[str] = set()
        async for wf in client.list_workflows(RUNNING_QUERY):
            running.add(wf.id)
            if wf.typed_search_attributes.get(sa.PHASE) == ProvisioningPhase.WAITING_READY:
                continue
            known = self._uids.get(wf.id)
            if known is None:
                known = self._uids[wf.id] = await _batch_uids(client, wf)
            uids |= known
        self._uids = {wid: u for wid, u in self._uids.items() if wid in running}
        return uids


async def _batch_uids(client: Client, wf: WorkflowExecution) -> frozenset[str]:
    """The uids of a running batch this process did not start: its memo's (runs that wrote one), else its input's."""
    memo = await wf.memo()
    if MEMO_PODS in memo:
        return frozenset(memo[MEMO_PODS] or ())
    handle = client.get_workflow_handle(wf.id, run_id=wf.run_id)
    async for event in handle.fetch_history_events(page_size=1):
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        if not payloads:
            break
        [inp] = await client.data_converter.decode(payloads, [ProvisioningInput])
        return frozenset(p.uid for p in inp.pods)
    return frozenset()
