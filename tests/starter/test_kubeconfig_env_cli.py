"""`status`, `force` and `cancel` read `$KUBECONFIG` like `pause` and kubectl do: the node's uid from that cluster
picks its termination (a same-named decoy found by a name search is not it), a stale KUBECONFIG is named in a
warning before Temporal is searched by name, and `status --watch` shows it in its header with the planner's
paused state and the stuck drain."""

from __future__ import annotations

import asyncio
import contextlib
import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from e2e.termination_helpers import PodSpec, cluster_objects, ec2_client, launch_instances, running_worker
from kubernetes import client as k8s
from support.cli_runner import nodeflow
from temporalio.client import Client

from client.planner_schedule import planner_schedule
from client.termination import start_termination
from contracts.termination import TerminationInput, TerminationPhase
from starter.cli import build_parser
from starter.cmd_status import collect
from starter.status_watch import watch
from workflows.termination import TerminationWorkflow

pytestmark = pytest.mark.e2e


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


async def _wait_blocked(handle: Any) -> None:
    for _ in range(150):
        with contextlib.suppress(Exception):
            if (await handle.query(TerminationWorkflow.progress)).blocking_pdbs:
                return
        await asyncio.sleep(0.1)
    raise AssertionError("drain never reported a blocking PDB")


async def _watch_once(client: Client, out: io.StringIO, schedule_id: str) -> str:
    address = client.service_client.config.target_host
    args = build_parser().parse_args(["status", "--watch", "--stuck-after", "0s", "--schedule-id", schedule_id,
                                      "--address", address])
    assert await asyncio.to_thread(watch, args, collect, out, 1) == 0
    return out.getvalue()


async def test_stale_kubeconfig_env_is_named_then_temporal_is_searched(
        temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "gone.kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(stale))
    node = f"no-such-node-{uuid.uuid4().hex[:6]}"
    for argv, message in ((["status", node], "No terminations or disruptions in flight"),
                          (["force", node, "--reason", "test"], "no termination in flight"),
                          (["cancel", node], "nothing to cancel")):
        code, out, err = await nodeflow(temporal_client, *argv)
        assert f"warning: cannot load kubeconfig {stale}" in err and "searching Temporal by node name" in err, err
        assert message in out + err and code == (0 if argv[0] == "status" else 1), (argv, code, out, err)


async def test_status_force_cancel_use_kubeconfig_env(temporal_client: Client, sim: Any, moto_endpoint: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=2, grace=1)], pdbs={"web": 2}))
    api = sim.api_client()
    node = k8s.CoreV1Api(api).read_node("n1")
    monkeypatch.setenv("KUBECONFIG", sim.kubeconfig_path)  # no --kubeconfig below
    inp = TerminationInput(node_name="n1", node_uid=node.metadata.uid, node_claim_name="n1-claim",
                           node_pool="default", provider_id=node.spec.provider_id, reason="Underutilized",
                           requested_by="kubeconfig-test")
    schedule_id = f"planner-{uuid.uuid4().hex[:8]}"
    schedule = await temporal_client.create_schedule(schedule_id, planner_schedule(paused=True, note="maintenance"))
    async with running_worker(temporal_client, sim, moto_endpoint) as tq:
        handle = await start_termination(temporal_client, inp, task_queue=tq)
        # a termination of another "n1" (an older node of that name) that no worker runs: a name search may pick it
        decoy = await start_termination(temporal_client, inp.model_copy(update={"node_uid": f"old-{uuid.uuid4()}"}),
                                        task_queue=f"nobody-{uuid.uuid4()}")
        await _wait_blocked(handle)
        code, out, err = await nodeflow(temporal_client, "cancel", "n1", "--reason", "kubeconfig test")
        assert code == 0, (out, err)
        assert (await asyncio.wait_for(handle.result(), timeout=30)).phase == TerminationPhase.CANCELLED
        await decoy.terminate("test decoy")

        handle = await start_termination(temporal_client, inp, task_queue=tq)  # a cancelled one may run anew
        await _wait_blocked(handle)
        plain = await _watch_once(temporal_client, io.StringIO(), schedule_id)
        lines = plain.splitlines()
        assert lines[0] == f"KUBECONFIG: {sim.kubeconfig_path} (from $KUBECONFIG; server {api.configuration.host})"
        assert lines[1].startswith("planner: PAUSED (maintenance)")
        assert lines[2].startswith("stuck drain: n1 running") and lines[2].endswith("blocked by default/web")
        assert lines[3].split()[:4] == ["NODE", "NODEPOOL", "REASON", "PHASE"]
        # the session's dev server may hold other tests' terminations too: find this one's row
        row = next(line for line in lines[4:] if line.split()[:1] == ["n1"] and "Draining" in line)
        assert row.split()[:6] == ["n1", "default", "Underutilized", "Draining", "2", "default/web"]
        screen = await _watch_once(temporal_client, _Tty(), schedule_id)
        assert screen.startswith("\x1b[?1049h\x1b[Hnodeflow status --watch") and screen.endswith("\x1b[?1049l")
        assert f"\nKUBECONFIG: {sim.kubeconfig_path} (from $KUBECONFIG" in screen
        assert "\nstuck drains (blocked, running 0s or more): 1\x1b[K\n  n1 " in screen

        code, out, err = await nodeflow(temporal_client, "status", "n2")
        assert code == 0 and "node n2 is in the cluster and not being terminated" in err, (out, err)
        code, out, err = await nodeflow(temporal_client, "force", "n1", "--reason", "kubeconfig test")
        assert code == 0, (out, err)
        assert (await asyncio.wait_for(handle.result(), timeout=30)).phase == TerminationPhase.TERMINATED
    await schedule.delete()
    api.close()
