"""Where one cluster of a fleet rollout is, from what its worker observed (docs/fleet.md §3).

Pure: the FleetRolloutWorkflow asks it after every observation, `nodeflow fleet rollout status` shows its words.
A cluster is done only when every target pool's nodes run the change and nothing is still rolling, so a change
applied a moment ago (nothing drifted yet) is never mistaken for a finished one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from api.fleet_observation import ClusterObservation, PoolObservation
from api.rollout_state import RolloutNote, RolloutNotePhase


class ClusterState(StrEnum):
    ROLLING = "Rolling"
    DONE = "Done"
    FAILED = "Failed"  # the cluster cannot finish by itself: a halted pool rollout, a missing pool or class


class WaitReason(StrEnum):
    """Why a cluster is not done (typed, so the workflow never branches on a message)."""

    NONE = "None"
    NODE_CLASS_RESOLVING = "NodeClassResolving"
    NODES_ROLLING = "NodesRolling"
    PODS_NOT_READY = "PodsNotReady"
    NODE_CLASS_NOT_FOUND = "NodeClassNotFound"
    NODE_CLASS_NOT_READY = "NodeClassNotReady"
    NODE_POOL_NOT_FOUND = "NodePoolNotFound"
    NOT_APPLIED = "NotApplied"
    POOL_ROLLOUT_HALTED = "PoolRolloutHalted"
    POOL_ROLLOUT_RESUMING = "PoolRolloutResuming"


@dataclass(frozen=True)
class ClusterVerdict:
    state: ClusterState
    reason: WaitReason
    message: str


def _rolling(pool: PoolObservation) -> str | None:
    """What still moves in a pool, in words; None when the pool is finished."""
    note = pool.rollout
    if note is not None:
        when = f" until {note.bake_until:%Y-%m-%dT%H:%M:%SZ}" if note.bake_until else ""
        return f"{pool.name}: drift rollout wave {note.wave}/{note.waves} {note.phase.value.lower()}{when}"
    if pool.updated < pool.nodes or pool.drifted or pool.launching:
        return (f"{pool.name}: {pool.updated}/{pool.nodes} nodes updated, {pool.drifted} drifted, "
                f"{pool.launching} launching")
    return None


def _resuming(obs: ClusterObservation, resumed: Mapping[str, RolloutNote]) -> list[PoolObservation]:
    """Pools whose note is still the halt just resumed: the rollout has the signal but has not yet rewritten its
    note (a busy cluster worker takes seconds), so they are resuming, not halted again (docs/fleet.md §5)."""
    return [p for p in obs.pools if p.rollout is not None and p.rollout.phase == RolloutNotePhase.HALTED
            and resumed.get(p.name) == p.rollout]


def _failure(obs: ClusterObservation, resuming: list[PoolObservation]) -> ClusterVerdict | None:
    if obs.node_class is not None and not obs.node_class_found:
        return ClusterVerdict(ClusterState.FAILED, WaitReason.NODE_CLASS_NOT_FOUND,
                              f"EC2NodeClass {obs.node_class} not found")
    for pool in obs.pools:
        if not pool.exists:
            return ClusterVerdict(ClusterState.FAILED, WaitReason.NODE_POOL_NOT_FOUND,
                                  f"NodePool {pool.name} not found")
        if not pool.applied:
            return ClusterVerdict(ClusterState.FAILED, WaitReason.NOT_APPLIED,
                                  f"NodePool {pool.name} does not carry this rollout's change")
        if pool.rollout is not None and pool.rollout.phase == RolloutNotePhase.HALTED and pool not in resuming:
            return ClusterVerdict(ClusterState.FAILED, WaitReason.POOL_ROLLOUT_HALTED,
                                  f"{pool.name}: drift rollout halted at wave {pool.rollout.wave}/{pool.rollout.waves}:"
                                  f" {pool.rollout.halt_reason}")
    if obs.node_class is not None and obs.node_class_resolved and not obs.node_class_ready:
        return ClusterVerdict(ClusterState.FAILED, WaitReason.NODE_CLASS_NOT_READY,
                              f"EC2NodeClass {obs.node_class} not Ready: {obs.node_class_message}")
    return None


def judge(obs: ClusterObservation, pods_ready_gate: bool = True,
          resumed: Mapping[str, RolloutNote] | None = None) -> ClusterVerdict:
    """The cluster's state: FAILED (cannot finish alone), DONE, or ROLLING with what it waits for. `resumed`: per
    pool, the halted note of a drift rollout the fleet has just resumed (that very note is not a new halt)."""
    resuming = _resuming(obs, resumed) if resumed else []
    failed = _failure(obs, resuming)
    if failed is not None:
        return failed
    if resuming:
        return ClusterVerdict(ClusterState.ROLLING, WaitReason.POOL_ROLLOUT_RESUMING, "; ".join(
            f"{p.name}: drift rollout resuming at wave {p.rollout.wave}/{p.rollout.waves}" for p in resuming
            if p.rollout is not None))
    if obs.node_class is not None and not obs.node_class_resolved:
        return ClusterVerdict(ClusterState.ROLLING, WaitReason.NODE_CLASS_RESOLVING,
                              f"EC2NodeClass {obs.node_class}: waiting for the change to be resolved")
    moving = [m for m in map(_rolling, obs.pools) if m]
    if moving:
        return ClusterVerdict(ClusterState.ROLLING, WaitReason.NODES_ROLLING, "; ".join(moving))
    if pods_ready_gate and (obs.pods_pending or obs.pods_not_ready):
        some = ", ".join(obs.pod_examples[:3])
        return ClusterVerdict(ClusterState.ROLLING, WaitReason.PODS_NOT_READY,
                              f"{obs.pods_pending} pods pending, {obs.pods_not_ready} not Ready ({some})")
    return ClusterVerdict(ClusterState.DONE, WaitReason.NONE, "every node updated, every pod Running and Ready")


def judge_prometheus(body: dict[str, Any], query: str) -> tuple[bool, str]:
    """A Prometheus /api/v1/query answer as a gate: it holds when the result is non-empty and every sample is
    non-zero (a comparison query such as `sum(up{job="api"}) >= 3` returns nothing when it fails)."""
    if body.get("status") != "success":
        return False, f"query {query!r} failed: {body.get('error', 'no error text')}"
    data = body.get("data") or {}
    result = data.get("result")
    if data.get("resultType") == "scalar":
        result = [{"value": result}]
    if not result:
        return False, f"query {query!r} returned no data"
    try:
        zero = [r for r in result if float((r.get("value") or [0, "0"])[1]) == 0]
    except (TypeError, ValueError, IndexError):
        return False, f"query {query!r} returned samples that are not numbers"
    if zero:
        return False, f"query {query!r}: {len(zero)} of {len(result)} samples are 0"
    return True, f"query {query!r} holds ({len(result)} samples)"
