"""Activities of DriftRolloutWorkflow: plan a wave's next drift commands for one pool, check that the workloads a
wave displaced are Running and Ready again (docs/semantics.md §15)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from temporalio import activity

from activities.kube_client import KubeClient
from activities.planning_runner import PlanningActivities, heartbeating, to_command
from api import labels as L
from workflows.policy_controls import PolicyControls, RolloutStart, controls_of
from workflows.policy_models import (
    RolloutNoteInput,
    RolloutPlan,
    RolloutPlanInput,
    WorkloadRef,
    WorkloadsInput,
    waves_of,
)

DRIFT_METHOD = "Drift"


class RolloutActivities:
    """Reads and plans through the planner's activities (one read path); the pods through the Kubernetes gateway."""

    def __init__(self, planning: PlanningActivities, kube: KubeClient) -> None:
        self._planning = planning
        self._kube = kube

    @activity.defn(name="rollout_plan")
    async def plan(self, inp: RolloutPlanInput) -> RolloutPlan:
        """The pool's drifted nodes not yet in disruption, and up to `limit` nodes' drift commands (budgets
        apply: a pass plans them as the planner would)."""
        return await heartbeating(self._plan(inp))

    async def _plan(self, inp: RolloutPlanInput) -> RolloutPlan:
        read, catalog = await self._planning.planning_read(inp.catalog_path)
        return await asyncio.to_thread(_plan_pool, read, catalog, inp.node_pool, inp.limit, inp.at)

    @activity.defn(name="rollout_workloads_ready")
    async def workloads_ready(self, inp: WorkloadsInput) -> list[str]:
        """The displaced workloads that still have a pod not Running and Ready (empty: all healthy)."""
        return await asyncio.to_thread(self._unready, inp.workloads)

    @activity.defn(name="rollout_annotate")
    async def annotate(self, inp: RolloutNoteInput) -> bool:
        """Set (or, with no value, remove) the NodePool's rollout annotation: one JSON merge patch, so a retry
        writes the same; False when the pool is gone (nothing to annotate)."""
        body = {"metadata": {"annotations": {L.ROLLOUT_ANNOTATION: inp.value}}}
        return await asyncio.to_thread(self._kube.patch_node_pool, inp.node_pool, body) is not None

    def _unready(self, workloads: list[WorkloadRef]) -> list[str]:
        by_ns: dict[str, list[WorkloadRef]] = {}
        for w in workloads:
            by_ns.setdefault(w.namespace, []).append(w)
        out = []
        for ns, refs in sorted(by_ns.items()):
            pods = self._kube.core.list_namespaced_pod(ns, _preload_content=False)
            items = _json_items(pods)
            for w in refs:
                bad = [p for p in items if _owned_by(p, w) and not _healthy(p)]
                if bad:
                    out.append(f"{w.kind} {ns}/{w.name}: {len(bad)} pod(s) not Running and Ready")
        return out


def _plan_pool(read: Any, catalog: Any, pool: str, limit: int, at: datetime) -> RolloutPlan:
    from api.snapshot import Snapshot
    from planning.plan import run_pass
    from planning.rollout import displaced_workloads, drifted_in_pool

    snapshot = read.snapshot if read.snapshot is not None else Snapshot.from_objects(read.objs)
    outcome = run_pass(snapshot, at, catalog, read.excluded, parsed=read.parsed, repair=())
    drifted = drifted_in_pool(outcome.cluster, pool, read.excluded, at)
    commands, nodes = [], []
    for c in outcome.commands:
        if c.method != DRIFT_METHOD or c.node_pool != pool or len(nodes) + len(c.nodes) > limit:
            continue
        if any(n in read.excluded for n in c.nodes):
            continue
        commands.append(to_command(c, read.index))
        nodes += [outcome.cluster.by_name[n] for n in c.nodes if n in outcome.cluster.by_name]
    workloads = [WorkloadRef(namespace=ns, kind=kind, name=name, uid=uid)
                 for ns, kind, name, uid in displaced_workloads(nodes)]
    return RolloutPlan(drifted=len(drifted), commands=commands, workloads=workloads)


def _json_items(resp: Any) -> list[dict[str, Any]]:
    import json

    return json.loads(resp.data).get("items") or []


def _owned_by(pod: dict[str, Any], w: WorkloadRef) -> bool:
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False
    if w.kind == "Pod":
        return meta.get("name") == w.name
    return any(o.get("uid") == w.uid or (o.get("kind") == w.kind and o.get("name") == w.name)
               for o in meta.get("ownerReferences") or [])


def _healthy(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def pool_policies(read: Any) -> dict[str, Any]:
    """Each NodePool's DisruptionPolicy (conflicted pools get none), from the cache's snapshot or the LISTed
    objects; empty when there is no policy (the common case costs one attribute read or one scan)."""
    from api.disruption_policy import KIND, DisruptionPolicy, resolve_policies
    from api.nodepool import NodePool

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
    from planning.cluster import parse_pool

    controls = {pool: c for pool, policy in by_pool.items() if (c := controls_of(policy)) is not None}
    kept, rollouts = [], {}
    for cmd in commands:
        policy = by_pool.get(cmd.node_pool)
        waves = waves_of(policy) if cmd.method == DRIFT_METHOD else None
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
    from api.nodepool import NodePool

    if read.snapshot is not None:
        return list(read.snapshot.node_pools)
    return [NodePool.model_validate(o) for o in read.objs if o.get("kind") == "NodePool"]


def _name(pool: Any) -> str:
    return pool.metadata.name


def wave_pools_drifted(read: Any, catalog: Any, pools: set[str], at: datetime | None = None) -> set[str]:
    """The drifted nodes of `pools` (pools whose drift goes to rollouts), for a second plan that leaves them out:
    a pass's one drift command must not be spent on a pool the planner does not drift itself."""
    from api.snapshot import Snapshot
    from planning.cluster import Cluster
    from planning.rollout import drifted_in_pool

    snapshot = read.snapshot if read.snapshot is not None else Snapshot.from_objects(read.objs)
    parsed = read.parsed
    cluster = Cluster.from_snapshot(snapshot, catalog) if parsed is None else \
        Cluster.from_parts(snapshot, parsed.pods, catalog, parsed.claims)
    return {n.name for pool in pools for n in drifted_in_pool(cluster, pool, read.excluded, at)}
