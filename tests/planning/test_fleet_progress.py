"""Where a cluster of a fleet rollout is (planning/fleet/progress.py), and the Prometheus gate's reading."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from api.fleet_observation import ClusterObservation, PoolObservation
from api.rollout_state import RolloutNote, RolloutNotePhase
from planning.fleet.progress import ClusterState, WaitReason, judge, judge_prometheus


def _obs(*pools: PoolObservation, **kw) -> ClusterObservation:
    return ClusterObservation(cluster="c1", node_class="default", pools=list(pools), **kw)


def _pool(**kw) -> PoolObservation:
    return PoolObservation(**{"name": "general", "applied": True, "nodes": 3, "updated": 3, **kw})


def test_done_only_when_every_node_runs_the_change_and_pods_are_ready() -> None:
    assert judge(_obs(_pool())).state == ClusterState.DONE
    rolling = judge(_obs(_pool(updated=1, drifted=2)))
    assert (rolling.state, rolling.reason) == (ClusterState.ROLLING, WaitReason.NODES_ROLLING)
    assert "1/3 nodes updated, 2 drifted" in rolling.message
    assert judge(_obs(_pool(launching=1))).state == ClusterState.ROLLING


def test_a_change_not_yet_resolved_is_never_done_even_with_nothing_drifted() -> None:
    v = judge(_obs(_pool(), node_class_resolved=False))
    assert (v.state, v.reason) == (ClusterState.ROLLING, WaitReason.NODE_CLASS_RESOLVING)


def test_a_running_pool_rollout_keeps_the_cluster_rolling_with_its_bake() -> None:
    note = RolloutNote(generation="g", wave=1, waves=3, phase=RolloutNotePhase.BAKING,
                       bake_until=datetime(2026, 11, 27, 10, 0, tzinfo=UTC))
    v = judge(_obs(_pool(rollout=note)))
    assert v.state == ClusterState.ROLLING and "wave 1/3 baking until 2026-11-27T10:00:00Z" in v.message


@pytest.mark.parametrize(("obs", "reason"), [
    (_obs(_pool(rollout=RolloutNote(wave=1, waves=2, phase=RolloutNotePhase.HALTED, halt_reason="never Ready"))),
     WaitReason.POOL_ROLLOUT_HALTED),
    (_obs(_pool(exists=False)), WaitReason.NODE_POOL_NOT_FOUND),
    (_obs(_pool(applied=False)), WaitReason.NOT_APPLIED),
    (_obs(_pool(), node_class_found=False), WaitReason.NODE_CLASS_NOT_FOUND),
    (_obs(_pool(), node_class_ready=False, node_class_message="no AMI matched"), WaitReason.NODE_CLASS_NOT_READY),
])
def test_failures_a_cluster_cannot_get_past_alone(obs: ClusterObservation, reason: WaitReason) -> None:
    v = judge(obs)
    assert (v.state, v.reason) == (ClusterState.FAILED, reason)


def test_an_unresolved_class_that_is_not_ready_is_still_resolving_not_failed() -> None:
    assert judge(_obs(_pool(), node_class_resolved=False, node_class_ready=False)).state == ClusterState.ROLLING


def test_the_pods_gate_can_be_switched_off() -> None:
    obs = _obs(_pool(), pods_pending=2, pod_examples=["ns/a", "ns/b"])
    v = judge(obs)
    assert (v.state, v.reason) == (ClusterState.ROLLING, WaitReason.PODS_NOT_READY) and "ns/a" in v.message
    assert judge(obs, pods_ready_gate=False).state == ClusterState.DONE


@pytest.mark.parametrize(("body", "ok", "words"), [
    ({"status": "success", "data": {"resultType": "vector", "result": [{"value": [1, "3"]}]}}, True, "holds"),
    ({"status": "success", "data": {"resultType": "vector", "result": []}}, False, "no data"),
    ({"status": "success", "data": {"resultType": "vector", "result": [{"value": [1, "1"]}, {"value": [1, "0"]}]}},
     False, "1 of 2 samples are 0"),
    ({"status": "success", "data": {"resultType": "scalar", "result": [1, "0"]}}, False, "samples are 0"),
    ({"status": "error", "error": "parse error"}, False, "parse error"),
    ({"status": "success", "data": {"resultType": "vector", "result": [{"value": [1, "NaNx"]}]}}, False, "not numbers"),
])
def test_prometheus_gate(body: dict, ok: bool, words: str) -> None:
    got_ok, message = judge_prometheus(body, "up")
    assert got_ok is ok and words in message


def _halted(halt: int) -> RolloutNote:
    return RolloutNote(generation="g", wave=1, waves=2, phase=RolloutNotePhase.HALTED, halt_reason="x", halt=halt)


def test_the_halt_just_resumed_is_resuming_a_new_one_fails() -> None:
    """After a resume the note may still show that halt until the cluster's worker rewrites it."""
    obs = _obs(_pool(rollout=_halted(1)))
    v = judge(obs, resumed={"general": _halted(1)})
    assert (v.state, v.reason, v.message) == (ClusterState.ROLLING, WaitReason.POOL_ROLLOUT_RESUMING,
                                              "general: drift rollout resuming at wave 1/2")
    assert judge(obs, resumed={"general": _halted(2)}).reason == WaitReason.POOL_ROLLOUT_HALTED
    assert judge(_obs(_pool(rollout=_halted(2))), resumed={"general": _halted(1)}).state == ClusterState.FAILED


def test_a_resumed_pool_does_not_hide_another_failure() -> None:
    obs = _obs(_pool(rollout=_halted(1)), _pool(name="other", exists=False))
    assert judge(obs, resumed={"general": _halted(1)}).reason == WaitReason.NODE_POOL_NOT_FOUND
