"""client/provisioning.py covered_pods: the pods a running batch still plans or launches for are not batched again;
a batch waiting for its nodes to be Ready covers none (its NodeClaims exist and count as capacity for the next)."""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from client.provisioning import MEMO_PODS, covered_pods
from contracts import search_attributes as sa
from contracts.provisioning import ProvisioningPhase


async def test_a_batch_waiting_for_ready_covers_none_of_its_pods(temporal_client: Client) -> None:
    tag = uuid.uuid4().hex[:8]
    queue = f"nobody-{tag}"  # nobody polls: the workflows stay Running with the phase they were started with
    phases = {"unset": None, "planning": ProvisioningPhase.PLANNING, "launching": ProvisioningPhase.LAUNCHING,
              "waiting": ProvisioningPhase.WAITING_READY}
    handles = []
    for name, phase in phases.items():
        attrs = TypedSearchAttributes([SearchAttributePair(sa.PHASE, phase.value)] if phase else [])
        handles.append(await temporal_client.start_workflow(
            "ProvisioningWorkflow", id=f"provision-test-{tag}-{name}", task_queue=queue,
            memo={MEMO_PODS: [f"{tag}-{name}"]}, search_attributes=attrs))
    query = f"WorkflowType = 'ProvisioningWorkflow' AND ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH " \
            f"'provision-test-{tag}'"
    for _ in range(100):  # visibility shows a new workflow within moments
        if len([wf async for wf in temporal_client.list_workflows(query)]) == len(phases):
            break
        await asyncio.sleep(0.1)
    mine = {uid for uid in await covered_pods(temporal_client) if uid.startswith(tag)}
    try:
        # a batch whose phase is not written yet covers its pods: it may be about to launch for them
        assert mine == {f"{tag}-unset", f"{tag}-planning", f"{tag}-launching"}
    finally:
        for h in handles:
            await h.terminate("test over")
