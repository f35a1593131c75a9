"""`nodeflow cancel NODE` reaches a disruption in flight: the command is rolled back (taint removed, the
replacement that never became Ready deleted) and the CLI says so; once nothing runs, it exits non-zero. The
node is then held from re-planning for the cool-down (`nodeflow plan` says why) until `nodeflow resume NODE`."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json

import pytest
from support.cli_runner import nodeflow
from support.disruption_stack import FAST, disruption_stack, never_ready_drift, wait_for

from api import labels
from contracts.disruption import DisruptionPhase
from starter import cli
from workflows.disruption import DisruptionWorkflow

pytestmark = pytest.mark.e2e


async def _plan(kubeconfig: str) -> dict:
    """`nodeflow plan --kubeconfig` (it talks to the cluster only, so no --address) as JSON."""
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return cli.run(["plan", "--kubeconfig", kubeconfig, "-o", "json"])

    assert await asyncio.to_thread(run) == 0
    return json.loads(out.getvalue())


async def test_cancel_rolls_back_a_disruption_waiting_for_its_replacement(temporal_client, sim_ec2,
                                                                          moto_endpoint) -> None:
    """Then: no new disruption of the node within the hold, `plan` lists it as blocked; resume; planned again."""
    never_ready_drift(sim_ec2)

    settings = FAST.model_copy(update={"ready_timeout_seconds": 120.0})
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, settings) as stack:
        result = await stack.planner_pass()
        assert len(result.started) == 1
        handle = stack.client.get_workflow_handle_for(DisruptionWorkflow.run, result.started[0])

        async def waiting() -> bool:
            return (await handle.query(DisruptionWorkflow.progress)).phase == DisruptionPhase.WAITING_READY

        for _ in range(300):
            if await waiting():
                break
            await asyncio.sleep(0.1)
        assert await waiting(), "the disruption never reached WaitingReady"

        code, out, err = await nodeflow(temporal_client, "cancel", "old-0", "--reason", "change freeze")
        assert code == 0, err
        assert "cancelled" in out and result.started[0] in out
        outcome = await asyncio.wait_for(handle.result(), timeout=60)
        assert outcome.outcome in (DisruptionPhase.CANCELLED, DisruptionPhase.ROLLED_BACK)
        node = next(n for n in stack.nodes() if n["metadata"]["name"] == "old-0")
        assert not any(t.get("key") == labels.DISRUPTED_TAINT_KEY for t in node["spec"].get("taints") or [])
        claim = outcome.replacements[0].node_claim
        await wait_for(lambda: claim not in {c["metadata"]["name"] for c in stack.node_claims()},
                       what="replacement NodeClaim deleted")

        code, _out, err = await nodeflow(temporal_client, "cancel", "old-0")
        assert code == 1 and "nothing to cancel" in err

        again = await stack.planner_pass()  # held: the cancel is not undone by the next pass
        assert again.started == [] and again.blocked >= 1
        annotations = next(n for n in stack.nodes() if n["metadata"]["name"] == "old-0")["metadata"]["annotations"]
        held_until = annotations[labels.DISRUPTION_HELD_UNTIL_ANNOTATION]
        kube = ("--kubeconfig", sim_ec2.kubeconfig_path)
        plan = await _plan(sim_ec2.kubeconfig_path)
        assert plan["commands"] == []
        (blocked,) = [b for b in plan["blocked"] if b["node"] == "old-0"]
        assert blocked["reason"].startswith("disruption cancelled by operator at ")
        assert f"held until {held_until}" in blocked["reason"]

        code, out, err = await nodeflow(temporal_client, "resume", "old-0", *kube)
        assert code == 0 and f"held until {held_until}" in out, err
        resumed = await stack.planner_pass()
        assert len(resumed.started) == 1, resumed
        code, out, err = await nodeflow(temporal_client, "cancel", "old-0", "--reason", "still frozen")
        assert code == 0, err
        await stack.outcome(resumed.started[0])
