"""Workflow ids from Temporal's visibility, without decoding what each listed workflow carries.

`Client.list_workflows` decodes every listed workflow's search attributes, memo and times: at 300 running
terminations 3.4 of 3.6 CPU-seconds were search-attribute decoding, when the caller needed only the ids. The same
ListWorkflowExecutions request, read for ids alone, costs a fraction of that.
"""

from __future__ import annotations

from temporalio.api.workflowservice.v1 import ListWorkflowExecutionsRequest
from temporalio.client import Client

PAGE_SIZE = 1000


async def workflow_ids(client: Client, query: str, page_size: int = PAGE_SIZE) -> list[str]:
    """The ids of every workflow `query` matches (all pages; an id appears once per listed run)."""
    ids: list[str] = []
    token = b""
    while True:
        page = await client.workflow_service.list_workflow_executions(ListWorkflowExecutionsRequest(
            namespace=client.namespace, query=query, page_size=page_size, next_page_token=token))
        ids += [e.execution.workflow_id for e in page.executions]
        token = page.next_page_token
        if not token:
            return ids
