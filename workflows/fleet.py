"""FleetRolloutWorkflow: one change carried through a fleet of clusters in stages (docs/fleet.md).

Runs on the fleet's task queue; everything that touches a cluster is an activity on that cluster's own queue, done
by its worker. Per stage, up to `maxClustersInFlight` clusters at a time: apply the change (with its record), then
observe until the cluster's own machinery (NodeClass resolution, drift, its DisruptionPolicy waves) has rolled it
through the target pools and every pod is Running and Ready; then the stage bakes (a durable timer, re-checking the
gates), then the next stage. A cluster that fails halts the fleet (or, with `onFailure: Skip`, is left and
reported); a cluster whose worker does not answer blocks its stage and is reported, never skipped. `pause`,
`resume` and `abort` are updates; halted and paused are workflow state, so they survive every restart.

A long rollout continues as new (docs/fleet.md §8) once its history is long: new activities wait, those in flight
finish, and the whole state goes to the next run, which picks up where this one was (a bake keeps its deadline, a
halted fleet stays halted, an applied cluster is not applied again). Behind the patch `fleet-continue-as-new`, so
runs started before it never continue as new.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, FailureError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

with workflow.unsafe.imports_passed_through():
    from activities.fleet import FleetActivities, prometheus_gate
    from api.duration import parse_duration
    from api.fleet import FleetCluster, FleetRollout, OnFailure
    from api.fleet_observation import ClusterObservation
    from api.rollout_state import RolloutNote, RolloutNotePhase
    from contracts import search_attributes as sa
    from contracts.fleet import (
        ApplyInput,
        ClusterPhase,
        ClusterStatus,
        FleetCarry,
        FleetInput,
        FleetPhase,
        FleetStatus,
        GateInput,
        ObserveInput,
        PoolHalts,
        StageStatus,
        pool_statuses,
    )
    from contracts.policy_controls import rollout_id
    from planning.fleet.progress import ClusterState, WaitReason, judge
    from workflows.rollout import DriftRolloutWorkflow

CLUSTER_CALL = timedelta(minutes=2)
CLUSTER_RETRY = RetryPolicy(initial_interval=timedelta(seconds=2), maximum_interval=timedelta(seconds=20),
                            maximum_attempts=5)
LOG_LINES = 50
CONTINUE_AS_NEW_PATCH = "fleet-continue-as-new"
# a resumed pool rollout's note that still shows the halt just resumed is "resuming", not a new halt (in CI the
# fleet re-observed before the busy cluster worker rewrote the note, and halted again on the stale one)
RESUMING_NOTE_PATCH = "fleet-resuming-pool-note"
T = TypeVar("T")


class _Aborted(Exception):
    """Internal: `abort` arrived."""


@workflow.defn
class FleetRolloutWorkflow:
    @workflow.init
    def __init__(self, inp: FleetInput) -> None:
        """The state is built (or taken from the last run) here, before any handler runs: an update that reaches a
        run continued as new in its first workflow task is applied before `run` starts, and `run` restoring the
        carried state afterwards lost it (a pause, in CI)."""
        self._st = FleetStatus(id="")
        self._halts: list[str] = []
        self._paused: str | None = None
        self._abort: str | None = None
        self._baking = False
        self._resumes = 0
        self._halted_at: dict[str, int] = {}  # who waits for a resume (cluster, `bake:<stage>`): the count then
        self._deadlines: dict[str, datetime | None] = {}  # per cluster, its stage's timeout
        self._pool_rollouts: dict[str, list[str]] = {}  # per halted cluster, its halted pool drift rollouts' ids
        self._pool_halts: dict[str, PoolHalts] = {}  # per cluster, its pools' halted notes (and if resumed, till)
        self._worker_wait = timedelta(minutes=2)  # the rollout's workerTimeout, parsed once per run
        self._continues = False  # may this run continue as new (patched)
        self._busy = 0  # activities and signals in flight
        self._draining = False  # continuing as new: nothing new starts
        if inp.carry is not None:
            self._restore(inp.carry)
        else:
            r = inp.rollout
            self._st = FleetStatus(id=r.rollout_id, name=r.metadata.name, stages=[
                StageStatus(name=s.name, clusters=[ClusterStatus(name=c.name, task_queue=c.queue)
                                                   for c in s.clusters])
                for s in r.spec.stages])

    # ---- messages -------------------------------------------------------------------------------------------

    @workflow.query
    def status(self) -> FleetStatus:
        return self._st

    @workflow.update
    def pause(self, reason: str) -> str:
        """No new cluster or stage starts; clusters already rolling go on (their rollouts are their own)."""
        self._paused = reason or "paused"
        self._refresh(f"paused: {self._paused}")
        return f"{self._st.id} paused"

    @pause.validator
    def _validate_pause(self, reason: str) -> None:
        self._refuse_if_ended()
        if self._paused is not None:
            raise ApplicationError(f"{self._st.id} is already paused ({self._paused})")

    @workflow.update
    def resume(self, reason: str) -> str:
        """Lift a pause or a halt; a halted pool drift rollout is resumed with it, and a failed bake restarts."""
        what = "halt" if self._halts else "pause"
        self._halts, self._paused = [], None
        self._resumes += 1
        self._refresh(f"resumed ({what}): {reason or 'no reason given'}")
        return f"{self._st.id} resumes at stage {self._st.stage}/{len(self._st.stages)}"

    @resume.validator
    def _validate_resume(self, reason: str) -> None:
        self._refuse_if_ended()
        if not self._halts and self._paused is None:
            raise ApplicationError(f"{self._st.id} is {self._st.phase.value}, neither halted nor paused")

    @workflow.update
    def abort(self, reason: str) -> str:
        """Stop for good: no cluster gets the change from now on; every cluster that has it keeps it with its record."""
        self._abort = reason or "aborted"
        return f"{self._st.id} aborted at stage {self._st.stage}/{len(self._st.stages)}"

    @abort.validator
    def _validate_abort(self, reason: str) -> None:
        self._refuse_if_ended()

    def _refuse_if_ended(self) -> None:
        if self._st.phase in (FleetPhase.SUCCEEDED, FleetPhase.ABORTED):
            raise ApplicationError(f"{self._st.id} already ended {self._st.phase.value}")

    # ---- run ------------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: FleetInput) -> FleetStatus:
        r = inp.rollout
        self._worker_wait = timedelta(seconds=_seconds(r.spec.worker_timeout))
        self._continues = workflow.patched(CONTINUE_AS_NEW_PATCH)
        if inp.carry is None:  # else restored in __init__
            self._refresh("started")
        try:
            if self._continues:
                await self._stages_or_continue(inp)
            else:
                await self._stages(inp)
        except _Aborted:
            self._log(f"aborted: {self._abort}")
            self._st.phase = FleetPhase.ABORTED
        else:
            self._log("succeeded")
            self._st.phase = FleetPhase.SUCCEEDED
        workflow.upsert_search_attributes([sa.PHASE.value_set(self._st.phase.value)])
        return self._st

    async def _stages(self, inp: FleetInput) -> None:
        """Stage after stage from the current one (the first, or where the last run continued as new)."""
        carried = inp.carry is not None
        for i in range(max(self._st.stage - 1, 0), len(inp.rollout.spec.stages)):
            here = carried and self._st.stage == i + 1  # the stage the last run was in
            baking = here and self._st.stages[i].phase == "Baking"
            self._st.stage = i + 1
            if not baking:
                await self._stage(inp, i, here)
            await self._bake(inp, i, baking)

    async def _stages_or_continue(self, inp: FleetInput) -> None:
        """Run the stages until they end, or until the history is long: then continue as new with the state."""
        stages = asyncio.create_task(self._stages(inp))
        due = asyncio.create_task(self._until_continue(inp.settings.continue_as_new_events))
        await workflow.wait([stages, due], return_when=asyncio.FIRST_COMPLETED)
        if not stages.done() and due.result():
            events = workflow.info().get_current_history_length()
            self._log(f"continuing as new after {events} history events (run {self._st.runs})")
            workflow.continue_as_new(FleetInput(rollout=inp.rollout, settings=inp.settings, carry=self._carry()))
        due.cancel()
        await stages

    async def _until_continue(self, max_events: int) -> bool:
        """True once the history is long and nothing is in flight; False when an abort came first."""
        def long() -> bool:
            info = workflow.info()
            return info.is_continue_as_new_suggested() or info.get_current_history_length() >= max_events

        await workflow.wait_condition(lambda: self._abort is not None or long())
        self._draining = True
        await workflow.wait_condition(lambda: self._abort is not None or (
            self._busy == 0 and workflow.all_handlers_finished()))
        self._draining = self._abort is None
        return self._draining

    async def _stage(self, inp: FleetInput, i: int, carried: bool = False) -> None:
        stage, ss = inp.rollout.spec.stages[i], self._st.stages[i]
        if not (carried and ss.phase == "Rolling"):
            await self._until_running()
            ss.phase, ss.started_at = "Rolling", workflow.now()
            self._log(f"stage {stage.name} started")
        slots = asyncio.Semaphore(inp.rollout.spec.max_clusters_in_flight)
        await asyncio.gather(*(self._cluster(inp, i, j, slots) for j in range(len(stage.clusters))))
        self._check_abort()

    async def _cluster(self, inp: FleetInput, i: int, j: int, slots: asyncio.Semaphore) -> None:
        r, stage = inp.rollout, inp.rollout.spec.stages[i]
        cluster, cs = stage.clusters[j], self._st.stages[i].clusters[j]
        if cs.phase in (ClusterPhase.DONE, ClusterPhase.SKIPPED):  # in an earlier run
            return
        async with slots:
            if cs.applied_at is None:  # an applied cluster (in an earlier run) is not applied again
                if cs.phase == ClusterPhase.PENDING:
                    await self._until_running()
                    cs.phase = ClusterPhase.APPLYING
                await self._reach(inp, cluster, cs, "apply", FleetActivities.apply,
                                  ApplyInput(rollout_id=r.rollout_id, stage=stage.name, cluster=cluster.name,
                                             change=_change(r), node_pools=cluster.node_pools))
                cs.phase, cs.applied_at = ClusterPhase.ROLLING, workflow.now()
                self._log(f"{cluster.name}: change applied")
            await self._follow(inp, i, cluster, cs)

    async def _follow(self, inp: FleetInput, i: int, cluster: FleetCluster, cs: ClusterStatus) -> None:
        """Observe the cluster until it is done, failing it on a halt, a missing target or the stage's timeout."""
        spec, limit, name = inp.rollout.spec, inp.rollout.spec.stages[i].time_limit, cluster.name
        if name not in self._deadlines:  # else carried from the last run
            self._deadlines[name] = workflow.now() + limit if limit else None
        while True:
            if name in self._halted_at:  # halted now, or when the last run continued as new
                await self._wait_resume(name)
                cs.phase = ClusterPhase.ROLLING
                await self._signal_resume(self._pool_rollouts.pop(name, []))
                self._resumed_pools(name, inp.settings.resume_grace_seconds)
                self._deadlines[name] = workflow.now() + limit if limit else None
            obs = await self._observe(inp, cluster, cs)
            verdict = judge(obs, spec.gates.pods_ready, self._resuming_notes(name, obs))
            cs.pools, cs.message = pool_statuses(obs), verdict.message
            if verdict.state == ClusterState.DONE:
                cs.phase, cs.done_at = ClusterPhase.DONE, workflow.now()
                self._log(f"{cluster.name}: done")
                return
            deadline = self._deadlines[name]
            late = deadline is not None and workflow.now() >= deadline
            if verdict.state == ClusterState.FAILED or late:
                message = verdict.message if not late else f"not finished within {limit}: {verdict.message}"
                if not self._fail(spec.on_failure, cluster, cs, message):
                    return
                if verdict.reason == WaitReason.POOL_ROLLOUT_HALTED:
                    self._pool_rollouts[name] = _pool_rollout_ids(cluster, obs)
                    self._pool_halts[name] = PoolHalts(notes=_halted_notes(obs))
                continue
            await self._sleep(inp.settings.poll_seconds)

    def _resumed_pools(self, name: str, grace_seconds: float) -> None:
        """The cluster's halted pool rollouts were just resumed: their notes count as resuming for a while."""
        halts = self._pool_halts.get(name)
        if halts is not None and workflow.patched(RESUMING_NOTE_PATCH):
            halts.resumed_until = workflow.now() + timedelta(seconds=grace_seconds)

    def _resuming_notes(self, name: str, obs: ClusterObservation) -> dict[str, RolloutNote] | None:
        """The notes that still mean "resuming" for this cluster; forgotten once rewritten or past the grace."""
        halts = self._pool_halts.get(name)
        if halts is None or halts.resumed_until is None:
            return None
        current = {p.name: p.rollout for p in obs.pools}
        if workflow.now() >= halts.resumed_until or all(current.get(k) != v for k, v in halts.notes.items()):
            del self._pool_halts[name]
            return None
        return halts.notes

    def _fail(self, on_failure: OnFailure, cluster: FleetCluster, cs: ClusterStatus, message: str) -> bool:
        """Skip the cluster (False) or halt the fleet (True: observe it again once resumed)."""
        cs.message = message
        if on_failure == OnFailure.SKIP:
            cs.phase = ClusterPhase.SKIPPED
            self._log(f"{cluster.name}: skipped: {message}")
            return False
        cs.phase = ClusterPhase.FAILED
        self._halt(f"{cluster.name}: {message}", cluster.name)
        return True

    async def _bake(self, inp: FleetInput, i: int, carried: bool = False) -> None:
        """Wait the stage's bake time, checking the gates; a failed gate halts, and the bake restarts on resume.
        A bake carried from the last run keeps its deadline (or, halted then, waits for the resume)."""
        stage, ss = inp.rollout.spec.stages[i], self._st.stages[i]
        key = f"bake:{stage.name}"
        keep = carried and key not in self._halted_at
        if carried and not keep:
            await self._wait_resume(key)
        while stage.bake > timedelta(0):
            if not keep:
                ss.phase, ss.bake_until = "Baking", workflow.now() + stage.bake
            self._baking = True
            self._refresh(f"stage {stage.name} {'still ' if keep else ''}baking until {ss.bake_until:%H:%M:%S}")
            keep = False
            failed = await self._bake_until(inp, i)
            self._baking = False
            if failed is None:
                break
            self._halt(f"stage {stage.name}: {failed}", key)
            await self._wait_resume(key)
        ss.phase, ss.done_at = "Done", workflow.now()
        self._refresh(f"stage {stage.name} done")

    async def _bake_until(self, inp: FleetInput, i: int) -> str | None:
        """None when the bake ran its time with every gate holding; else what failed."""
        ss = self._st.stages[i]
        while workflow.now() < ss.bake_until:
            left = (ss.bake_until - workflow.now()).total_seconds()
            await self._sleep(min(inp.settings.gate_seconds, left))
            failed = await self._gates(inp, i)
            if failed is not None:
                return failed
        return None

    async def _gates(self, inp: FleetInput, i: int) -> str | None:
        spec, stage = inp.rollout.spec, inp.rollout.spec.stages[i]
        for cluster, cs in zip(stage.clusters, self._st.stages[i].clusters, strict=True):
            if cs.phase != ClusterPhase.DONE:
                continue
            verdict = judge(await self._observe(inp, cluster, cs), spec.gates.pods_ready)
            if verdict.state != ClusterState.DONE:
                return f"{cluster.name}: {verdict.message}"
        if spec.gates.prometheus is not None:
            query = GateInput(url=spec.gates.prometheus.url, query=spec.gates.prometheus.query)
            gate = await self._in_flight(lambda: workflow.execute_activity(
                prometheus_gate, query, start_to_close_timeout=timedelta(seconds=30), retry_policy=CLUSTER_RETRY,
                summary="Prometheus gate"))
            if not gate.ok:
                return gate.message
        return None

    # ---- reaching a cluster -------------------------------------------------------------------------------

    async def _observe(self, inp: FleetInput, cluster: FleetCluster, cs: ClusterStatus) -> ClusterObservation:
        r = inp.rollout
        return await self._reach(inp, cluster, cs, "observe", FleetActivities.observe,
                                 ObserveInput(rollout_id=r.rollout_id, cluster=cluster.name, change=_change(r),
                                              node_pools=cluster.node_pools))

    async def _reach(self, inp: FleetInput, cluster: FleetCluster, cs: ClusterStatus, what: str, fn: Any,
                     arg: Any) -> Any:
        """Run `fn` on the cluster's queue until it answers. A worker that never picks the task up is reported
        (Unreachable) and waited for: its stage is blocked, never skipped."""
        wait = self._worker_wait
        while True:
            try:
                result = await self._in_flight(lambda: workflow.execute_activity_method(
                    fn, arg, task_queue=cluster.queue, schedule_to_start_timeout=wait,
                    start_to_close_timeout=CLUSTER_CALL, retry_policy=CLUSTER_RETRY,
                    summary=f"{what} {cluster.name}"))
            except ActivityError as exc:
                self._unreachable(cluster, cs, what, exc, wait)
                await self._sleep(inp.settings.unreachable_retry_seconds)
                continue
            if cs.phase == ClusterPhase.UNREACHABLE:
                cs.phase = ClusterPhase.APPLYING if what == "apply" else ClusterPhase.ROLLING
                self._log(f"{cluster.name}: its worker answers again")
            return result

    def _unreachable(self, cluster: FleetCluster, cs: ClusterStatus, what: str, exc: ActivityError,
                     wait: timedelta) -> None:
        cause = exc.cause
        if isinstance(cause, ActivityTimeout) and cause.type == TimeoutType.SCHEDULE_TO_START:
            cs.phase = ClusterPhase.UNREACHABLE
            cs.message = (f"no worker polled task queue {cluster.queue} within {wait}; stage "
                          f"{self._st.stage} waits for it")
        else:
            cs.message = f"{what} failed: {getattr(cause, 'message', None) or cause or exc}; retrying"
        self._log(f"{cluster.name}: {cs.message}")

    # ---- state ----------------------------------------------------------------------------------------------

    def _halt(self, reason: str, key: str) -> None:
        """Halt the fleet; `key` (a cluster, `bake:<stage>`) then waits for a resume (`_wait_resume`)."""
        self._halts.append(reason)
        self._halted_at[key] = self._resumes
        self._refresh(f"halted: {reason}")

    async def _wait_resume(self, key: str) -> None:
        resumes = self._halted_at[key]
        await workflow.wait_condition(lambda: self._resumes > resumes or self._abort is not None)
        del self._halted_at[key]
        self._check_abort()

    async def _in_flight(self, start: Callable[[], Awaitable[T]]) -> T:
        """Start an activity or a signal and await it, counted as in flight (a run continues as new only when
        nothing is). It awaits nothing before `start`, so the order of commands is what it was before."""
        self._busy += 1
        try:
            return await start()
        finally:
            self._busy -= 1

    async def _signal_resume(self, ids: list[str]) -> None:
        """Signal `resume` to halted pool drift rollouts (by their queue-scoped ids)."""
        for wid in ids:
            handle = workflow.get_external_workflow_handle_for(DriftRolloutWorkflow.run, wid)
            with contextlib.suppress(FailureError):  # ended meanwhile, or never ran on that queue
                await self._in_flight(lambda h=handle: h.signal(DriftRolloutWorkflow.resume_signal,
                                                                "fleet rollout resumed"))

    def _carry(self) -> FleetCarry:
        return FleetCarry(status=self._st, halts=self._halts, paused=self._paused, resumes=self._resumes,
                          halted_at=self._halted_at, deadlines=self._deadlines, pool_rollouts=self._pool_rollouts,
                          pool_halts=self._pool_halts)

    def _restore(self, carry: FleetCarry) -> None:
        """Take the state the last run handed over (it continued as new); the stages go on from there."""
        self._st = carry.status.model_copy(deep=True)
        self._st.runs += 1
        self._halts, self._paused, self._resumes = list(carry.halts), carry.paused, carry.resumes
        self._halted_at, self._deadlines = dict(carry.halted_at), dict(carry.deadlines)
        self._pool_rollouts = {k: list(v) for k, v in carry.pool_rollouts.items()}
        self._pool_halts = {k: v.model_copy(deep=True) for k, v in carry.pool_halts.items()}
        stage = self._st.stages[self._st.stage - 1] if self._st.stage else None
        self._baking = stage is not None and stage.phase == "Baking" and f"bake:{stage.name}" not in self._halted_at
        self._log(f"run {self._st.runs}: continued as new")

    async def _until_running(self) -> None:
        """Wait while the fleet is paused or halted (or the run drains to continue as new)."""
        await workflow.wait_condition(lambda: (not self._halts and self._paused is None and not self._draining)
                                      or self._abort is not None)
        self._check_abort()

    async def _sleep(self, seconds: float) -> None:
        """Wait between two steps. While the run drains to continue as new, the next step is never taken here
        (the next run takes it): every step in flight ends at a sleep, and then nothing is in flight."""
        if self._draining:
            await workflow.wait_condition(lambda: not self._draining or self._abort is not None)
        with contextlib.suppress(TimeoutError):  # the time passed without an abort
            await workflow.wait_condition(lambda: self._abort is not None, timeout=max(seconds, 0.001))
        self._check_abort()

    def _check_abort(self) -> None:
        if self._abort is not None:
            raise _Aborted()

    def _refresh(self, line: str) -> None:
        st = self._st
        st.halted_reason, st.paused_reason = "; ".join(self._halts), self._paused or ""
        if st.phase not in (FleetPhase.SUCCEEDED, FleetPhase.ABORTED):
            st.phase = (FleetPhase.HALTED if self._halts else FleetPhase.PAUSED if self._paused is not None
                        else FleetPhase.BAKING if self._baking else FleetPhase.RUNNING)
        workflow.upsert_search_attributes([sa.PHASE.value_set(st.phase.value)])
        self._log(line)

    def _log(self, line: str) -> None:
        self._st.log = [*self._st.log, f"{workflow.now():%Y-%m-%dT%H:%M:%SZ} {line}"][-LOG_LINES:]


def _change(r: FleetRollout) -> dict:
    return r.spec.change.model_dump(mode="json", by_alias=True, exclude_none=True)


def _seconds(duration: str) -> float:
    return parse_duration(duration).total_seconds()


def _halted_notes(obs: ClusterObservation) -> dict[str, RolloutNote]:
    """Per pool, the note of its halted drift rollout, as observed when the fleet halted on it."""
    return {p.name: p.rollout for p in obs.pools
            if p.rollout is not None and p.rollout.phase == RolloutNotePhase.HALTED}


def _pool_rollout_ids(cluster: FleetCluster, obs: ClusterObservation) -> list[str]:
    """The queue-scoped ids of the cluster's pool drift rollouts (resumed with the fleet)."""
    return [sa.queue_scoped(rollout_id(pool.name, pool.rollout.generation), cluster.queue)
            for pool in obs.pools if pool.rollout is not None and pool.rollout.generation]
