"""`nodeflow status` against a real Temporal dev server: DisruptionWorkflows (run by a worker with fake activities)
are listed beside terminations, `status NODE` advises by the node's state (cancel a disruption, force or cancel a
termination, a finished one named with `--all`), and `--watch` piped prints a line per change, never its header
again."""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from support.cli_runner import nodeflow
from support.disruption_fakes import Fakes, command
from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from activities.planning_runner import MEMO_METHOD, MEMO_NODES
from client.termination import start_termination
from contracts.disruption import DisruptionInput, DisruptionPhase, DisruptionSettings, NodeRef
from contracts.policy import HookCall
from contracts.policy_controls import HookSpec, PolicyControls
from contracts.termination import TerminationInput
from starter.cli import build_parser
from starter.cmd_status import collect
from starter.status_watch import watch
from workflows.disruption import DisruptionWorkflow

# validated at once, then waits for a replacement that never becomes Ready (a timer, no busy polling)
SETTINGS = DisruptionSettings(validation_delay_seconds=0.01, ready_poll_seconds=3600, ready_timeout_seconds=7200)


@pytest.fixture(autouse=True)
def _no_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No kubeconfig: the advice comes from Temporal alone (the cluster's part is the in-cluster e2e test's)."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


@activity.defn(name="policy_pre_disruption_hook")
async def _unanswered_hook(call: HookCall) -> int:
    """A pre-disruption hook that never answers (until the worker stops)."""
    await asyncio.Event().wait()
    return 200


@asynccontextmanager
async def _disruption(client: Client, policy: PolicyControls | None = None,
                      phase: DisruptionPhase = DisruptionPhase.WAITING_READY
                      ) -> AsyncIterator[tuple[WorkflowHandle, list[str]]]:
    """A two-node replace command in `phase`, with the planner's memo; its nodes' names are unique."""
    tag = uuid.uuid4().hex[:8]
    cmd = command(n=2, reason="Underutilized", method="MultiNodeConsolidation", pool=f"pool-{tag}")
    cmd.nodes = [NodeRef(name=f"st-{tag}-{i}", uid=f"st-{tag}-uid-{i}", node_claim=f"claim-{tag}-{i}")
                 for i in range(2)]
    tq = f"status-{tag}"
    async with Worker(client, task_queue=tq, workflows=[DisruptionWorkflow], activities=[
            *Fakes(ready_after_polls=None).activities(), _unanswered_hook]):
        handle = await client.start_workflow(
            DisruptionWorkflow.run, DisruptionInput(command=cmd, settings=SETTINGS, policy=policy),
            id=cmd.workflow_id, task_queue=tq, memo={MEMO_NODES: [n.name for n in cmd.nodes], MEMO_METHOD: cmd.method})
        await _until(lambda: _phase_is(handle, phase))
        try:
            yield handle, [n.name for n in cmd.nodes]
        finally:
            if (await handle.describe()).status.name == "RUNNING":
                await handle.terminate("test over")


async def _phase_is(handle: WorkflowHandle, phase: DisruptionPhase) -> bool:
    return (await handle.query(DisruptionWorkflow.progress)).phase == phase


async def _until(check: Callable[[], Awaitable[Any]], timeout: float = 15.0) -> Any:
    """Poll until `check` answers something truthy (the visibility store lags the workflow by a moment)."""
    async def poll() -> Any:
        while not (got := await check()):
            await asyncio.sleep(0.1)
        return got
    return await asyncio.wait_for(poll(), timeout)


async def _json_rows(client: Client, *argv: str) -> list[dict[str, Any]]:
    code, out, err = await nodeflow(client, "status", *argv, "-o", "json")
    assert code == 0, err
    return json.loads(out)


async def _status_saying(client: Client, node: str, words: str) -> tuple[str, str] | None:
    """(stdout, stderr) of `nodeflow status NODE` once its advice says `words`, else None."""
    code, out, err = await nodeflow(client, "status", node)
    assert code == 0, err
    return (out, err) if words in err else None


async def test_status_lists_a_disruption_and_advises_cancel(temporal_client: Client) -> None:
    async with _disruption(temporal_client) as (handle, nodes):
        async def listed() -> dict[str, Any] | None:
            rows = await _json_rows(temporal_client)
            return next((r for r in rows if r.get("workflowId") == handle.id and r.get("phase") == "WaitingReady"
                         and r.get("replacements")), None)
        row = await _until(listed)
        assert row["kind"] == "Disruption" and row["status"] == "RUNNING" and row["nodes"] == nodes
        assert (row["method"], row["reason"]) == ("MultiNodeConsolidation", "Underutilized")
        assert [(r["instanceType"], r["state"]) for r in row["replacements"]] == [("m5.large", "NotReady")]
        assert row["waitingFor"] == "ReplacementsReady" and row["cancellable"] is True and row["readyDeadline"]

        code, out, err = await nodeflow(temporal_client, "status", nodes[1])  # not the first node: found by memo
        assert code == 0 and "No terminations" not in out, (out, err)
        header, line = out.splitlines()[:2]
        assert header.split()[:3] == ["NODES", "NODEPOOL", "METHOD"] and "WAITING FOR" in header
        assert line.split()[0] == ",".join(nodes) and "WaitingReady" in line and "replacements Ready: 0 of 1" in line
        assert f"`nodeflow cancel {nodes[1]}` rolls it back" in err and "kubectl delete" not in err, err

        code, out, err = await nodeflow(temporal_client, "cancel", nodes[0], "--reason", "status test")
        assert code == 0, (out, err)
        assert (await handle.result()).outcome == DisruptionPhase.CANCELLED

        _, err = await _until(lambda: _status_saying(temporal_client, nodes[0], "finished"))
        assert f"the disruption of {nodes[0]} finished (COMPLETED, phase Cancelled" in err
        assert f"`nodeflow status {nodes[0]} --all`" in err
        rows = await _json_rows(temporal_client, nodes[0], "--all")
        assert [(r["kind"], r["status"], r["phase"], r["waitingFor"]) for r in rows] == [
            ("Disruption", "COMPLETED", "Cancelled", "Nothing")]


async def test_status_advises_force_or_cancel_then_names_the_finished_termination(temporal_client: Client) -> None:
    node = f"st-term-{uuid.uuid4().hex[:8]}"
    inp = TerminationInput(node_name=node, node_uid=f"uid-{node}", node_claim_name=f"{node}-claim",
                           node_pool="default", provider_id="aws:///us-west-2a/i-0", reason="Drifted",
                           requested_by="status-test")
    handle = await start_termination(temporal_client, inp, task_queue=f"nobody-{uuid.uuid4()}")  # no worker runs it

    _, err = await _until(lambda: _status_saying(temporal_client, node, "is being terminated"), timeout=30)
    assert f"`nodeflow force {node} --reason TEXT`" in err and f"`nodeflow cancel {node}`" in err, err

    await handle.terminate("status test")

    out, err = await _until(lambda: _status_saying(temporal_client, node, "finished"), timeout=30)
    assert "No terminations or disruptions in flight (--all includes finished ones)." in out
    assert f"the termination of {node} finished (TERMINATED" in err and f"`nodeflow status {node} --all`" in err
    rows = await _json_rows(temporal_client, node, "--all")
    assert [(r["kind"], r["status"]) for r in rows] == [("Termination", "TERMINATED")]


async def test_watch_piped_prints_the_header_once_and_disruptions(temporal_client: Client) -> None:
    async with _disruption(temporal_client) as (handle, nodes):
        await _until(lambda: _listed(temporal_client, handle.id))
        address = temporal_client.service_client.config.target_host
        args = build_parser().parse_args(["status", "--watch", "--interval", "0.2", "--address", address,
                                          "--schedule-id", f"none-{uuid.uuid4().hex[:6]}"])
        out = io.StringIO()
        assert await asyncio.to_thread(watch, args, collect, out, 4) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("KUBECONFIG: none") and lines.count(lines[0]) == 1, lines
    assert sum(line.split()[:1] == ["NODES"] for line in lines) == 1, lines
    mine = [line for line in lines if line.startswith(",".join(nodes))]
    assert len(mine) == 1 and "WaitingReady" in mine[0], lines  # one line, not one per refresh


async def test_status_says_a_disruption_waits_for_its_pre_disruption_ack(temporal_client: Client) -> None:
    policy = PolicyControls(policy="gated", pre_disruption=HookSpec(url="http://hook.invalid/pre", ack_required=True,
                                                                    ack_timeout_seconds=3600))
    async with _disruption(temporal_client, policy, DisruptionPhase.VALIDATING) as (handle, nodes):
        async def waiting_for_ack() -> dict[str, Any] | None:
            rows = await _json_rows(temporal_client, nodes[0])
            return next((r for r in rows if r.get("waitingFor") == "PreDisruptionAck"), None)
        row = await _until(waiting_for_ack)
        assert row["workflowId"] == handle.id and row["phase"] == "Validating" and row["replacements"] == []
        code, out, err = await nodeflow(temporal_client, "status", nodes[0])
        assert code == 0 and "the pre-disruption hook's ack (or `nodeflow approve NODE`)" in out, out
        assert f"`nodeflow cancel {nodes[0]}` rolls it back" in err, err


async def _listed(client: Client, workflow_id: str) -> bool:
    rows = await _json_rows(client)
    return any(r.get("workflowId") == workflow_id and r.get("phase") == "WaitingReady" for r in rows)
