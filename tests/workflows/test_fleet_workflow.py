"""FleetRolloutWorkflow against a real Temporal server, through the CLI: a cluster whose worker never answers
blocks its stage and is reported (never skipped, even with onFailure Skip), a second start of the same change
finds the first, another rollout over the same pools is refused while it runs (and starts the moment it ended), and
abort leaves no cluster changed."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli_runner import nodeflow
from support.disruption_stack import record_history

from api.fleet import load_fleet_rollout
from contracts.fleet import ClusterPhase, FleetPhase
from runtime.fleet_worker import build_fleet_worker
from workflows.fleet import FleetRolloutWorkflow


def _doc(tag: str, ami: str) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "FleetRollout", "metadata": {"name": f"t-{tag}"},
            "spec": {"change": {"nodeClass": {"name": "default", "amiSelectorTerms": [{"id": ami}]}},
                     "workerTimeout": "1s", "onFailure": "Skip",
                     "stages": [{"name": "dev", "clusters": [{"name": f"gone-{tag}", "taskQueue": f"nobody-{tag}",
                                                              "nodePools": ["general"]}]},
                                {"name": "prod", "clusters": [{"name": f"prod-{tag}", "taskQueue": f"prod-{tag}",
                                                               "nodePools": ["general"]}]}]}}


async def _until(handle: Any, check: Any, what: str, timeout: float = 20) -> Any:
    end = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < end:
        st = await handle.query(FleetRolloutWorkflow.status)
        if check(st):
            return st
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {await handle.query(FleetRolloutWorkflow.status)}")


@pytest.mark.e2e
async def test_an_unreachable_cluster_blocks_its_stage_until_aborted(temporal_client: Any, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    fleet_queue = f"fleet-{tag}"
    path = tmp_path / "rollout.yaml"
    path.write_text(yaml.safe_dump(_doc(tag, "ami-0a")))
    rid = load_fleet_rollout(_doc(tag, "ami-0a")).rollout_id
    worker = build_fleet_worker(temporal_client, fleet_queue)
    async with worker:
        code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "start", "-f", str(path),
                                        "--fleet-task-queue", fleet_queue)
        assert code == 0, err
        assert f"fleet rollout {rid} started: 2 stage(s), 2 NodePool(s) in 2 cluster(s)" in out
        handle = temporal_client.get_workflow_handle_for(FleetRolloutWorkflow.run, rid)
        st = await _until(handle, lambda s: s.stages[0].clusters[0].phase == ClusterPhase.UNREACHABLE,
                          "the dev cluster to be reported unreachable")
        assert f"no worker polled task queue nobody-{tag} within 0:00:01" in st.stages[0].clusters[0].message
        assert st.stage == 1 and st.stages[1].clusters[0].phase == ClusterPhase.PENDING  # blocked, not skipped

        code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "start", "-f", str(path),
                                        "--fleet-task-queue", fleet_queue)
        assert code == 0 and f"fleet rollout {rid} already running" in out, err
        other = tmp_path / "other.yaml"
        other.write_text(yaml.safe_dump(_doc(tag, "ami-0b")))
        code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "start", "-f", str(other),
                                        "--fleet-task-queue", fleet_queue)
        assert code == 1 and f"fleet rollout {rid} is already rolling gone-{tag}/general" in err, (out, err)

        code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "status", rid)
        assert code == 0 and "Unreachable" in out and f"nobody-{tag}" in out, err
        code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "resume", rid)
        assert code == 1 and "neither halted nor paused" in err
        code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "abort", "-f", str(path),
                                        "--reason", "wrong AMI")
        assert code == 0, err
        result = await asyncio.wait_for(handle.result(), 20)
        await record_history(handle, "FleetRolloutWorkflow", "unreachable_abort")
        # at once, while visibility may still list the aborted rollout as Running: the other change now starts
        code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "start", "-f", str(other),
                                        "--fleet-task-queue", fleet_queue)
        assert code == 0 and "started" in out, (out, err)
        code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "abort", "-f", str(other),
                                        "--reason", "done")
        assert code == 0, err
    assert result.phase == FleetPhase.ABORTED and result.stages[1].clusters[0].applied_at is None
    assert any("aborted: wrong AMI" in line for line in result.log)
