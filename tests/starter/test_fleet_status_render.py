"""`nodeflow fleet rollout status` in a table: what an operator reads while a rollout is halted or resuming."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts.fleet import ClusterPhase, ClusterStatus, FleetPhase, FleetStatus, PoolStatus, StageStatus
from starter.cmd_fleet import format_status

BAKE = datetime(2026, 11, 27, 11, 0, tzinfo=UTC)


def _status(**kw) -> FleetStatus:
    dev = StageStatus(name="dev", phase="Done", clusters=[ClusterStatus(name="c1", task_queue="q1",
                                                                        phase=ClusterPhase.DONE)])
    staging = StageStatus(name="staging", phase="Rolling", clusters=[ClusterStatus(
        name="c2", task_queue="q2", phase=ClusterPhase.ROLLING,
        message="general: drift rollout resuming at wave 1/2",
        pools=[PoolStatus(name="general", nodes=3, updated=1, drifted=2, wave=1, waves=2, rollout_phase="Halted",
                          halt_reason="1 replacement(s) never became Ready (max 1)")])])
    prod = StageStatus(name="prod", phase="Baking", bake_until=BAKE)
    return FleetStatus(id="fleet-abc", name="ami", stage=2, stages=[dev, staging, prod], **kw)


def test_a_resuming_cluster_says_so_with_its_pool_wave_and_halt() -> None:
    out = format_status(_status())
    assert out.splitlines()[0] == "fleet rollout fleet-abc (ami): Running, stage 2/3"
    assert "  c2 (q2): Rolling - general: drift rollout resuming at wave 1/2" in out
    assert ("    general: 1/3 nodes updated, 2 drifted, wave 1/2 Halted, halted: 1 replacement(s) never became Ready "
            "(max 1)") in out
    assert "stage prod: Baking, baking until 2026-11-27T11:00:00Z" in out


def test_a_halted_rollout_says_how_to_go_on_and_a_continued_one_its_run() -> None:
    out = format_status(_status(phase=FleetPhase.HALTED, halted_reason="c2: general: drift rollout halted", runs=3))
    lines = out.splitlines()
    assert lines[0] == "fleet rollout fleet-abc (ami): Halted, stage 2/3 (Temporal run 3: it continued as new)"
    assert lines[1] == "halted: c2: general: drift rollout halted"
    assert "nodeflow fleet rollout resume fleet-abc" in lines[2]
    assert "nodeflow fleet rollout abort fleet-abc" in lines[2]
