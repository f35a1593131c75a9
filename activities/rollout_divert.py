"""Which of a planning pass's drift commands become drift rollouts (docs/semantics.md §15): the pools whose
DisruptionPolicy rolls drift out in waves, and their drifted nodes, so the pass plans the other pools alone.

Apart from activities/rollout.py because the planner's pass (activities/planning_runner.py) calls it while the
rollout's activities plan through that pass: each imports this, neither the other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api.disruption_policy import KIND, DisruptionPolicy, resolve_policies
from api.nodepool import NodePool
from api.snapshot import Snapshot
from contracts.policy import waves_of
from contracts.policy_controls import PolicyControls, RolloutStart, controls_of
from planning.cluster import Cluster, parse_pool
from planning.disruption.method_names import MethodName
from planning.policies.drift_waves import drifted_in_pool


def pool_policies(read: Any) -> dict[str, Any]:
    """Each NodePool's DisruptionPolicy (conflicted pools get none), from the cache's snapshot or the LISTed
    objects; empty when there is no policy (the common case costs one attribute read or one scan)."""
    if read.snapshot is not None:
        policies, pools = list(getattr(read.snapshot, "disruption_policies", None) or ()), read.snapshot.node_pools
    else:
        raw = [o for o in read.objs if o.get("kind") == KIND]
        if not raw:
            return {}
        policies = [DisruptionPolicy.model_validate(o) for o in raw]
        pools = [NodePool.model_validate(o) for o in read.objs if o.get("kind") == "NodePool"]
    if not policies:
        return {}
    return resolve_policies(pools, policies)[0]


def divert_drift(read: Any, commands: list[Any]) -> tuple[list[Any], dict[str, PolicyControls], list[RolloutStart]]:
    """Split a pass's commands: drift of a pool whose policy rolls drift out in waves becomes that pool's rollout
    (one DriftRolloutWorkflow per pool and generation); every pool's hook and escalation controls ride along."""
    by_pool = pool_policies(read)
    if not by_pool:
        return commands, {}, []

    controls = {pool: c for pool, policy in by_pool.items() if (c := controls_of(policy)) is not None}
    kept, rollouts = [], {}
    for cmd in commands:
        policy = by_pool.get(cmd.node_pool)
        waves = waves_of(policy) if cmd.method == MethodName.DRIFT else None
        if waves is None:
            kept.append(cmd)
            continue
        if cmd.node_pool not in rollouts:
            pool_obj = next(p for p in _pools(read) if _name(p) == cmd.node_pool)
            # the pool's uid too: another cluster's same-named pool in one Temporal namespace never collides
            generation = f"{pool_obj.metadata.uid or ''}/{parse_pool(pool_obj).template_hash or ''}"
            rollouts[cmd.node_pool] = RolloutStart(node_pool=cmd.node_pool, generation=generation, waves=waves,
                                                   controls=controls.get(cmd.node_pool))
    return kept, controls, list(rollouts.values())


def _pools(read: Any) -> list[Any]:
    """NodePool models (their template hash is what planning compares for drift)."""
    if read.snapshot is not None:
        return list(read.snapshot.node_pools)
    return [NodePool.model_validate(o) for o in read.objs if o.get("kind") == "NodePool"]


def _name(pool: Any) -> str:
    return pool.metadata.name


def wave_pools_drifted(read: Any, catalog: Any, pools: set[str], at: datetime | None = None) -> set[str]:
    """The drifted nodes of `pools` (pools whose drift goes to rollouts), for a second plan that leaves them out:
    a pass's one drift command must not be spent on a pool the planner does not drift itself."""

    snapshot = read.snapshot if read.snapshot is not None else Snapshot.from_objects(read.objs)
    parsed = read.parsed
    cluster = Cluster.from_snapshot(snapshot, catalog) if parsed is None else \
        Cluster.from_parts(snapshot, parsed.pods, catalog, parsed.claims)
    return {n.name for pool in pools for n in drifted_in_pool(cluster, pool, read.excluded, at)}
