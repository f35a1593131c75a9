"""The Temporal Web UI's workflow list answers "which node, which pool, why" (docs/operations.md, Temporal UI).

Headless Chromium against a dev server's own UI: workflows started the way nodeflow starts them (no worker runs
them, so each row shows exactly what its start set), the list with the four search attributes as columns (as
the UI's column picker stores them), read as text and captured. Skipped where no `chromium` is installed
(`apt-get install chromium`). NODEFLOW_UI_SHOTS=docs/images writes the picture there (docs/operations.md shows
it); otherwise it goes to the test's tmp directory, so a test run leaves the tree as it was.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from client.interruption import temporal_starters
from client.provisioning import start_provisioning
from client.termination import start_termination
from contracts.disruption import DisruptionCommand, DisruptionInput, NodeRef, Replacement
from contracts.interruption import PrespinInput
from contracts.provisioning import PodRef
from contracts.termination import TerminationInput
from devstack.browser import Page, chromium, find_chromium
from devstack.processes import TemporalDevServer
from workflows import summaries
from workflows.disruption import DisruptionWorkflow

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium: apt-get install chromium")
SHOT = "ui-workflow-list.png"
NAMESPACE = "default"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TemporalDevServer]:
    dev = TemporalDevServer(log_path=tmp_path / "temporal.log")  # with its Web UI
    dev.start()
    try:
        yield dev
    finally:
        dev.stop()


async def _connect(address: str) -> Client:
    for _ in range(60):  # the port answers before the frontend is healthy
        try:
            return await Client.connect(address, data_converter=pydantic_data_converter)
        except RuntimeError:
            await asyncio.sleep(0.3)
    return await Client.connect(address, data_converter=pydantic_data_converter)


async def _start_rows(client: Client, queue: str) -> None:
    """A drift drain, a consolidation, an expiry, a spot pre-spin and a provisioning batch, as nodeflow starts
    them (the client's start functions, the planner's start keywords for the disruption)."""
    def node(name: str) -> NodeRef:
        return NodeRef(name=name, uid=f"uid-{uuid.uuid4()}", node_claim=f"{name}-claim", node_pool="general")

    for name, pool, reason in [("general-01", "general", "Drifted"), ("batch-07", "batch", "Expired")]:
        await start_termination(client, TerminationInput(node_name=name, node_uid=f"uid-{uuid.uuid4()}",
                                                         node_pool=pool, reason=reason), task_queue=queue)
    cmd = DisruptionCommand(method="SingleNodeConsolidation", reason="Underutilized", node_pool="general",
                            nodes=[node("general-03")], pods=4, savings_per_hour=0.05,
                            replacements=[Replacement(instance_types=["m5.large"], price=0.096)])
    await client.start_workflow(DisruptionWorkflow.run, DisruptionInput(command=cmd), id=cmd.workflow_id,
                                task_queue=queue, **summaries.disruption(cmd).start_kwargs())
    _, prespin = temporal_starters(client, queue)
    await prespin(PrespinInput(node_name="spot-02", node_uid=f"uid-{uuid.uuid4()}", node_pool="spot",
                               replacement=Replacement(instance_types=["m5.large"], capacity_type="spot", price=0.03)))
    await start_provisioning(client, [PodRef(key="crawler/crawler-0", uid=f"p-{uuid.uuid4()}")], task_queue=queue)


def _list(page: Page, ui: str, query: str, wait_for: str, gone: str = "", timeout: float = 10.0) -> str:
    """The list's text for `query` once it shows `wait_for` and (a row the query leaves out) no longer `gone`."""
    page.goto(f"{ui}/namespaces/{NAMESPACE}/workflows?query={urllib.parse.quote(query)}", wait_for=wait_for)
    deadline = time.monotonic() + timeout
    while gone and gone in page.text() and time.monotonic() < deadline:
        time.sleep(0.3)
    return page.text()


async def test_the_list_names_node_pool_reason_and_phase(server: TemporalDevServer, tmp_path: Path) -> None:
    client = await _connect(server.address)
    await _start_rows(client, f"nobody-{uuid.uuid4()}")
    assert CHROMIUM is not None and server.ui_url is not None
    out = Path(os.environ.get("NODEFLOW_UI_SHOTS") or tmp_path)
    with chromium(CHROMIUM) as page:
        await asyncio.to_thread(page.goto, f"{server.ui_url}/namespaces/{NAMESPACE}/workflows", "Workflow", 30.0)
        page.set_list_columns(NAMESPACE)
        text = await asyncio.to_thread(_list, page, server.ui_url, 'ExecutionStatus="Running"', "general-01")
        for shown in ("general-01", "Drifted", "batch-07", "Expired", "general-03", "Underutilized",
                      "spot-02", "SpotInterrupted", "Provisioning", "Pending"):
            assert shown in text, f"{shown!r} not in the list: {' '.join(text.split())[-800:]}"
        page.screenshot(out / SHOT, 1480, 600)

        # docs/operations.md's per-pool view keeps the pool's rows only
        pool = await asyncio.to_thread(_list, page, server.ui_url,
                                       'NodeflowNodePool="general" AND ExecutionStatus="Running"', "general-03",
                                       "spot-02")
        assert "general-01" in pool and "spot-02" not in pool and "batch-07" not in pool
    png = (out / SHOT).read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) < 150_000  # small enough to commit
