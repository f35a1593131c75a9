"""Drift waves end to end (dev server + simulator + the real worker): a DriftRolloutWorkflow whose first wave's
replacement never becomes Ready halts, says why in `nodeflow rollout status`, on its NodePool's
`nodeflow.dev/rollout` annotation and so in `nodeflow plan`, stays halted, and after `nodeflow rollout resume`
finishes its waves with a bake between them (the annotation then gone)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import uuid

import pytest
from kubernetes import client as k8s
from support.cli_runner import nodeflow
from support.disruption_stack import FAST, disruption_stack, fresh, record_history, replica_set, wait_for

from api import labels
from api.rollout_state import RolloutNotePhase, parse_rollout_note
from bench.clusters import node_objects, node_pool
from contracts.policy import HaltCause, RolloutInput, RolloutPhase
from contracts.policy_controls import RolloutStart, WavesSpec
from starter import cli
from workflows.rollout import DriftRolloutWorkflow

pytestmark = pytest.mark.e2e
SETTINGS = FAST.model_copy(update={"ready_timeout_seconds": 6.0, "ready_poll_seconds": 0.5})
QUICK_DRAIN = {"min_drain_seconds": 0.5}  # Karpenter's 5 s MinDrainTime (semantics §9.5), shortened


def _two_drifted(sim) -> None:
    """`old-0`, `old-1` drifted, full (1500m pods): each needs a replacement; the cheaper c5.large never gets Ready."""
    sim.world.mark_never_ready("c5.large")
    objs = [node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never", requirements=[
        {"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["c5.large", "m5.large"]}])]
    for i in range(2):
        objs += node_objects(f"old-{i}", "m5.large", annotations={labels.TEMPLATE_HASH_ANNOTATION: "stale"})
    objs.append(replica_set("api", 2, "1500m"))
    sim.load_objects(fresh(objs))


def _note(stack):
    """The `default` NodePool's rollout annotation, parsed (None: none)."""
    pool = k8s.CustomObjectsApi(stack.api).get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default")
    return parse_rollout_note((pool["metadata"].get("annotations") or {}).get(labels.ROLLOUT_ANNOTATION))


async def _live_plan(kubeconfig: str) -> dict:
    """`nodeflow plan --kubeconfig ... -o json` (in a thread: the CLI runs its own event loop)."""
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return cli.run(["plan", "--kubeconfig", kubeconfig, "-o", "json"])

    assert await asyncio.to_thread(run) == 0
    return json.loads(out.getvalue())


async def _status(handle):
    return await handle.query(DriftRolloutWorkflow.status)


async def _until(handle, check, timeout: float, what: str):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        st = await _status(handle)
        if check(st):
            return st
        await asyncio.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}: {await _status(handle)}")


async def test_rollout_halts_on_a_never_ready_replacement_and_resumes(temporal_client, sim_ec2,
                                                                      moto_endpoint) -> None:
    _two_drifted(sim_ec2)
    start = RolloutStart(node_pool="default", generation=f"gen-{uuid.uuid4().hex}",
                         waves=WavesSpec(waves=[1, "100%"], bake_seconds=2, max_failed_replacements=1,
                                         health_timeout_seconds=20))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, SETTINGS, worker=QUICK_DRAIN) as stack:
        await wait_for(lambda: sum(1 for n in stack.nodes() if n["metadata"]["name"].startswith("old-")) == 2,
                       what="two old nodes")
        handle = await stack.client.start_workflow(DriftRolloutWorkflow.run, RolloutInput(start=start,
                                                                                          settings=SETTINGS),
                                                   id=start.workflow_id, task_queue=stack.task_queue)
        halted = await _until(handle, lambda s: s.phase == RolloutPhase.HALTED, 40, "the rollout to halt")
        assert halted.halted == HaltCause.FAILED_REPLACEMENTS and halted.wave == 1 and halted.targets == [1, 2]
        assert "never became Ready" in halted.halt_reason and halted.disrupted == 0
        await wait_for(lambda: any(e["reason"] == "RolloutHalted" and "wave 1" in e["message"]
                                   for e in stack.events()), what="RolloutHalted Event on the NodePool")
        await wait_for(lambda: (n := _note(stack)) is not None and n.phase == RolloutNotePhase.HALTED,
                       what="the NodePool's rollout annotation to say Halted")
        note = _note(stack)
        assert (note.wave, note.waves, note.generation) == (1, 2, start.generation)
        assert "never became Ready" in note.halt_reason
        plan = await _live_plan(sim_ec2.kubeconfig_path)
        assert not any(c["method"] == "Drift" for c in plan["commands"]), plan["commands"]
        halts = [b for b in plan["blocked"] if b["reason"].startswith("drift rollout halted at wave 1/2: ")]
        assert halts and all("never became Ready" in b["reason"]
                             and b["reason"].endswith("(nodeflow rollout resume default)") for b in halts), plan
        assert {b["node"] for b in halts} <= {"old-0", "old-1"}

        await asyncio.sleep(1.5)  # a halted rollout stays halted: nothing more is started
        assert (await _status(handle)).disruptions == halted.disruptions
        code, out, err = await nodeflow(temporal_client, "rollout", "status", "default")
        assert code == 0, err
        assert "Halted, wave 1/2" in out and "never became Ready" in out and "nodeflow rollout resume" in out

        with sim_ec2.world.store.lock:
            sim_ec2.world.never_ready_types.clear()
        code, out, err = await nodeflow(temporal_client, "rollout", "resume", "default", "--reason", "AMI fixed")
        assert code == 0, err
        baking = await _until(handle, lambda s: s.phase == RolloutPhase.BAKING, 40, "wave 1 to bake")
        assert baking.bake_until is not None and baking.disrupted == 1
        result = await asyncio.wait_for(handle.result(), 50)
        await record_history(handle, "DriftRolloutWorkflow", "halt_resume")

        assert result.phase == RolloutPhase.SUCCEEDED and result.disrupted == 2, result.message
        assert not any(n["metadata"]["name"].startswith("old-") for n in stack.nodes())
        assert _note(stack) is None  # a finished rollout leaves no annotation behind
        code, _out, err = await nodeflow(temporal_client, "rollout", "resume", "default")
        assert code == 1 and "no running drift rollout" in err
