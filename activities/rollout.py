"""Activities of DriftRolloutWorkflow: plan a wave's next drift commands for one pool, check that the workloads a
wave displaced are Running and Ready again (docs/semantics.md §15)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from temporalio import activity

from activities.heartbeat import heartbeating
from activities.planning_runner import PlanningActivities, to_command
from api import labels as L
from api.snapshot import Snapshot
from contracts.policy import RolloutNoteInput, RolloutPlan, RolloutPlanInput, WorkloadRef, WorkloadsInput
from gateways.kube import KubeClient
from planning.disruption.method_names import MethodName
from planning.planner.plan import run_pass
from planning.policies.drift_waves import displaced_workloads, drifted_in_pool


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

    snapshot = read.snapshot if read.snapshot is not None else Snapshot.from_objects(read.objs)
    outcome = run_pass(snapshot, at, catalog, read.excluded, parsed=read.parsed, repair=())
    drifted = drifted_in_pool(outcome.cluster, pool, read.excluded, at)
    commands, nodes = [], []
    for c in outcome.commands:
        if c.method != MethodName.DRIFT or c.node_pool != pool or len(nodes) + len(c.nodes) > limit:
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
