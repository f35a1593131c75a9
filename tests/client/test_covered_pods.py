"""client/provisioning.py CoveredPods: the pods a running batch still plans or launches for are not batched again;
a batch waiting for its nodes to be Ready covers none (its NodeClaims exist and count as capacity for the next).
A batch this process started is known by its start; one started elsewhere (a previous leader, the CapacityBuffer
controller) is read from its started event's input, and a run of the older form from its memo. And the whole
chain against the real server: a window of 30,000 pods, refused as one workflow, starts as parts that cover it."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError

from client.provisioning import MEMO_PODS, CoveredPods, start_provisioning
from contracts import search_attributes as sa
from contracts.provisioning import PodRef, ProvisioningInput, ProvisioningPhase, batch_parts


async def _visible(client: Client, prefix: str, count: int) -> None:
    query = f"WorkflowType = 'ProvisioningWorkflow' AND ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH " \
            f"'{prefix}'"
    for _ in range(100):  # visibility shows a new workflow within moments
        if len([wf async for wf in client.list_workflows(query)]) == count:
            return
        await asyncio.sleep(0.1)


async def test_a_batch_waiting_for_ready_covers_none_of_its_pods(temporal_client: Client) -> None:
    tag = uuid.uuid4().hex[:8]
    queue = f"nobody-{tag}"  # nobody polls: the workflows stay Running with the phase they were started with
    phases = {"unset": None, "planning": ProvisioningPhase.PLANNING, "launching": ProvisioningPhase.LAUNCHING,
              "waiting": ProvisioningPhase.WAITING_READY}
    handles = []
    for name, phase in phases.items():
        attrs = TypedSearchAttributes([SearchAttributePair(sa.PHASE, phase.value)] if phase else [])
        handles.append(await temporal_client.start_workflow(
            "ProvisioningWorkflow", ProvisioningInput(pods=[PodRef(key=f"ns/{name}", uid=f"{tag}-{name}")]),
            id=f"provision-test-{tag}-{name}", task_queue=queue, search_attributes=attrs))
    old = await temporal_client.start_workflow(  # a run of the older form: its pods in its memo
        "ProvisioningWorkflow", ProvisioningInput(pods=[]), id=f"provision-test-{tag}-old", task_queue=queue,
        memo={MEMO_PODS: [f"{tag}-old"]})
    await _visible(temporal_client, f"provision-test-{tag}", len(phases) + 1)
    covered = CoveredPods()
    covered.started(f"provision-test-{tag}-unset", [PodRef(key="ns/known", uid=f"{tag}-known")])
    try:
        mine = {uid for uid in await covered.read(temporal_client) if uid.startswith(tag)}
        # a batch whose phase is not written yet covers its pods: it may be about to launch for them; the one this
        # process started is known by its start, the others read from their input (or the old run's memo)
        assert mine == {f"{tag}-known", f"{tag}-planning", f"{tag}-launching", f"{tag}-old"}
        await handles[1].terminate("done")
        await _visible(temporal_client, f"provision-test-{tag}", len(phases))
        mine = {uid for uid in await covered.read(temporal_client) if uid.startswith(tag)}
        assert mine == {f"{tag}-known", f"{tag}-launching", f"{tag}-old"}  # a finished batch covers nothing
    finally:
        for h in [*handles[:1], *handles[2:], old]:
            await h.terminate("test over")


async def test_a_window_temporal_refuses_whole_starts_in_parts_that_cover_it(temporal_client: Client) -> None:
    tag = uuid.uuid4().hex[:8]
    pods = [PodRef(key=f"shop-{tag}/web-{i:05d}-{uuid.uuid4().hex[:5]}", uid=f"{tag}-{uuid.uuid4()}")
            for i in range(30_000)]
    with pytest.raises(RPCError):  # 3.1 MB of input and the old 1.2 MB memo: over gRPC's 4 MiB
        await temporal_client.start_workflow(
            "ProvisioningWorkflow", ProvisioningInput(pods=pods), id=f"provision-test-{tag}-whole",
            task_queue=f"nobody-{tag}", memo={MEMO_PODS: [p.uid for p in pods]})
    parts = batch_parts(pods)
    handles = [await start_provisioning(temporal_client, part, task_queue=f"nobody-{tag}") for part in parts]
    try:
        assert len(handles) == len(parts) == 7
        assert await (await handles[0].describe()).memo() == {}  # no memo: Temporal warns over 2 KiB of one
        fresh, want = CoveredPods(), {p.uid for p in pods}  # as a new leader meets them: read from each input
        for _ in range(100):  # until visibility lists every part
            mine = {uid for uid in await fresh.read(temporal_client) if uid.startswith(tag)}
            if mine == want:
                break
            await asyncio.sleep(0.1)
        assert mine == want
    finally:
        for h in handles:
            await h.terminate("test over")
