"""client/visibility.py: the ids a visibility query matches, over every page, as list_workflows gives them."""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client

from client.visibility import workflow_ids


async def test_every_page_is_read_and_only_the_matching_ids_come_back(temporal_client: Client) -> None:
    tag = uuid.uuid4().hex[:8]
    kind, queue = f"VisibilityProbe{tag}", f"nobody-{tag}"  # nobody polls: the workflows stay Running
    handles = [await temporal_client.start_workflow(kind, id=f"vis-{tag}-{i}", task_queue=queue) for i in range(5)]
    other = await temporal_client.start_workflow(f"Other{tag}", id=f"other-{tag}", task_queue=queue)
    query = f"WorkflowType = '{kind}' AND ExecutionStatus = 'Running'"
    ids: list[str] = []
    for _ in range(100):  # visibility shows a new workflow within moments
        ids = await workflow_ids(temporal_client, query, page_size=2)  # three pages
        if len(ids) == 5:
            break
        await asyncio.sleep(0.1)
    assert sorted(ids) == sorted(h.id for h in handles)
    assert sorted(ids) == sorted([wf.id async for wf in temporal_client.list_workflows(query)])
    for h in [*handles, other]:
        await h.terminate("test over")
