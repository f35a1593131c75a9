"""DriftRolloutWorkflow: a NodePool's drift rolled out in waves (docs/semantics.md §15.2).

One execution per NodePool and drift generation (`rollout-<pool>-<hash>`), started by the planner instead of
one-by-one drift disruptions. Each wave disrupts its share of the pool's drifted nodes through
DisruptionWorkflows (children, so budgets, validation and pre-spun replacements apply as ever), then checks that
the displaced workloads are Running and Ready, then bakes (a durable timer). It halts after
`max_failed_replacements` replacements that never became Ready, or when the workloads stay unhealthy past the
health timeout; a halted rollout waits (across restarts: it is workflow state) for `resume` or `abort`.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from activities.events import EventActivities
    from activities.planning_runner import MEMO_NODES
    from activities.rollout import RolloutActivities
    from api import events
    from api.events import EventReason
    from api.rollout_state import RolloutNote, RolloutNotePhase
    from contracts import search_attributes as sa
    from contracts.disruption import (
        DisruptionCommand,
        DisruptionInput,
        DisruptionPhase,
        DisruptionResult,
        EventsInput,
        EventSpec,
    )
    from contracts.policy import (
        HaltCause,
        RolloutInput,
        RolloutNoteInput,
        RolloutPhase,
        RolloutPlan,
        RolloutPlanInput,
        RolloutResult,
        RolloutStatus,
        WorkloadRef,
        WorkloadsInput,
        wave_targets,
    )
    from workflows import summaries
    from workflows.disruption import DisruptionWorkflow
    from workflows.retries import STEP_RETRY

PLAN_TIMEOUT = timedelta(minutes=5)
RESUME_DURING_HALT_PATCH = "rollout-resume-during-halt"
IDLE_SECONDS = 10.0  # nothing could start (budgets, calendar): plan again after this long


class _Aborted(Exception):
    """Internal: `abort` arrived; end the rollout where it is."""


@workflow.defn
class DriftRolloutWorkflow:
    def __init__(self) -> None:
        self._status = RolloutStatus(node_pool="", generation="", phase=RolloutPhase.STARTING)
        self._resume: str | None = None
        self._abort: str | None = None
        self._running: dict[str, asyncio.Task[DisruptionResult | None]] = {}
        self._workloads: list[WorkloadRef] = []

    # ---- messages -------------------------------------------------------------------------------------------

    @workflow.query
    def status(self) -> RolloutStatus:
        return self._status

    @workflow.update
    def resume(self, reason: str) -> str:
        """Continue a halted rollout: the failure count starts again and the halted wave is retried."""
        self._resume = reason or "resumed"
        return f"rollout of {self._status.node_pool} resumes at wave {self._status.wave}"

    @resume.validator
    def _validate_resume(self, reason: str) -> None:
        if self._status.phase != RolloutPhase.HALTED:
            raise ApplicationError(f"rollout of {self._status.node_pool} is {self._status.phase.value}, not halted")

    @workflow.update
    def abort(self, reason: str) -> str:
        """Stop the rollout for good (disruptions already started finish on their own)."""
        self._abort = reason or "aborted"
        return f"rollout of {self._status.node_pool} aborted at wave {self._status.wave}"

    @abort.validator
    def _validate_abort(self, reason: str) -> None:
        if self._status.phase in (RolloutPhase.SUCCEEDED, RolloutPhase.ABORTED):
            raise ApplicationError(f"rollout of {self._status.node_pool} already ended {self._status.phase.value}")

    @workflow.signal
    def resume_signal(self, reason: str) -> None:
        if self._status.phase == RolloutPhase.HALTED:
            self._resume = reason or "resumed"

    @workflow.signal
    def abort_signal(self, reason: str) -> None:
        self._abort = reason or "aborted"

    # ---- run ------------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: RolloutInput) -> RolloutResult:
        st = self._status
        st.node_pool, st.generation = inp.start.node_pool, inp.start.generation
        self._upsert_phase(RolloutPhase.STARTING, first=True)
        try:
            first = await self._plan(inp, 0)
            st.targets = wave_targets(inp.start.waves.waves, first.drifted)
            st.waves = len(st.targets)
            for i, target in enumerate(st.targets):
                st.wave = i + 1
                await self._note()
                exhausted = await self._wave(inp, target, last=i == len(st.targets) - 1)
                if exhausted:
                    break  # no drifted node left: no bake, no more waves
                if i < len(st.targets) - 1:
                    await self._bake(inp.start.waves.bake_seconds)
        except _Aborted:
            return await self._end(RolloutPhase.ABORTED, f"aborted at wave {st.wave}: {self._abort}")
        return await self._end(RolloutPhase.SUCCEEDED, f"{st.disrupted} drifted node(s) replaced in {st.waves} wave(s)")

    async def _wave(self, inp: RolloutInput, target: int, last: bool) -> bool:
        """Disrupt until `target` nodes (cumulative) are done; halt and wait on failures or unhealthy workloads.
        True when the pool has no drifted node left."""
        self._workloads = []
        while True:
            exhausted = await self._disrupt_until(inp, target, last)
            await self._wait_running()
            halted = self._failures_halt(inp) or await self._health_halt(inp)
            if halted is not None:
                await self._halt(*halted)
            elif exhausted or self._status.disrupted >= target:
                return exhausted

    async def _disrupt_until(self, inp: RolloutInput, target: int, last: bool) -> bool:
        """Start the wave's disruptions as budgets allow; True when the pool has no drifted node left."""
        st = self._status
        st.phase = RolloutPhase.ROLLING
        pause = max(inp.settings.ready_poll_seconds, 1.0)
        while True:
            self._check_abort()
            if self._failures_halt(inp) is not None:
                return False
            want = target - st.disrupted - len(self._running)
            if want <= 0 and not last:
                return False
            plan = await self._plan(inp, max(want, 1))
            if not plan.commands and not self._running and plan.drifted == 0:
                return True
            for cmd in plan.commands:
                await self._start(inp, cmd)
            self._workloads += [w for w in plan.workloads if w not in self._workloads]
            st.message = f"wave {st.wave}: {len(self._running)} disruption(s) running, {plan.drifted} drifted left"
            # give visibility time to list what was just started; with nothing started, wait for budgets to free
            await self._wait_one(pause if plan.commands else min(IDLE_SECONDS, pause * 4))

    async def _start(self, inp: RolloutInput, cmd: DisruptionCommand) -> None:
        try:
            handle = await workflow.start_child_workflow(
                DisruptionWorkflow.run, DisruptionInput(command=cmd, settings=inp.settings, policy=inp.start.controls),
                id=cmd.workflow_id, task_queue=workflow.info().task_queue,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                memo={MEMO_NODES: [n.name for n in cmd.nodes]}, **self._child_text(cmd))
        except WorkflowAlreadyStartedError:
            return  # a disruption of this node is already running (or ran): the next plan sees the outcome
        self._status.disruptions.append(cmd.workflow_id)
        self._running[cmd.workflow_id] = asyncio.ensure_future(_result(handle))

    def _child_text(self, cmd: DisruptionCommand) -> dict[str, Any]:
        """The child's summary names its nodes, reason and pool and its search attributes are set from the start
        (as the planner's); disruptions started before UI_ATTRIBUTES_PATCH named the wave and nodes only."""
        wave = f"rollout wave {self._status.wave}"
        if workflow.patched(summaries.UI_ATTRIBUTES_PATCH):
            return summaries.disruption(cmd, by=wave).start_kwargs()
        return {"static_summary": f"rollout {self._status.node_pool} wave {self._status.wave}: "
                                  f"{', '.join(n.name for n in cmd.nodes)}"[:200]}

    async def _wait_one(self, idle_seconds: float) -> None:
        """Until a running disruption ends (its outcome counted), an abort, or `idle_seconds` pass."""
        tasks = list(self._running.values())
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(lambda: any(t.done() for t in tasks) or self._abort is not None,
                                          timeout=timedelta(seconds=idle_seconds) if idle_seconds else None,
                                          timeout_summary="wait for the wave's disruptions")
        self._collect()

    async def _wait_running(self) -> None:
        while self._running:
            await self._wait_one(0)
            self._check_abort()

    def _collect(self) -> None:
        st = self._status
        for wid, task in list(self._running.items()):
            if not task.done():
                continue
            del self._running[wid]
            result = task.result()
            if result is None:
                continue
            if result.outcome == DisruptionPhase.SUCCEEDED:
                st.disrupted += len(result.terminations) or 1
            elif result.rollback_cause == "NotReady":
                st.failed_replacements += 1

    def _failures_halt(self, inp: RolloutInput) -> tuple[HaltCause, str] | None:
        allowed = max(inp.start.waves.max_failed_replacements, 1)
        failed = self._status.failed_replacements
        if failed >= allowed:
            return HaltCause.FAILED_REPLACEMENTS, f"{failed} replacement(s) never became Ready (max {allowed})"
        return None

    async def _health_halt(self, inp: RolloutInput) -> tuple[HaltCause, str] | None:
        """Poll the displaced workloads until all are Running and Ready, or the health timeout passes."""
        if not self._workloads:
            return None
        st = self._status
        st.phase = RolloutPhase.CHECKING_HEALTH
        deadline = workflow.now() + timedelta(seconds=inp.start.waves.health_timeout_seconds)
        while True:
            unready: list[str] = await workflow.execute_activity_method(
                RolloutActivities.workloads_ready, WorkloadsInput(workloads=self._workloads),
                start_to_close_timeout=timedelta(minutes=1), retry_policy=STEP_RETRY)
            if not unready:
                return None
            left = (deadline - workflow.now()).total_seconds()
            if left <= 0:
                return HaltCause.UNHEALTHY_WORKLOADS, "not Running and Ready within " \
                    f"{inp.start.waves.health_timeout_seconds:g}s: " + "; ".join(unready)
            st.message = "waiting for " + "; ".join(unready)
            await self._sleep(min(inp.settings.ready_poll_seconds, left))

    async def _halt(self, cause: HaltCause, why: str) -> None:
        st = self._status
        self._upsert_phase(RolloutPhase.HALTED)
        st.halted, st.halt_reason, st.halts = cause, why, st.halts + 1
        # from here a resume is taken (the phase is Halted): one that comes while the Event and the note are written
        # is kept, not cleared after them (a fleet resumes as soon as it reads the note)
        early = workflow.patched(RESUME_DURING_HALT_PATCH)
        if early:
            self._resume = None
        workflow.logger.warning("rollout of %s halted: %s", st.node_pool, why)
        await self._event(EventSpec(kind="NodePool", name=st.node_pool, reason=EventReason.ROLLOUT_HALTED,
                                    type="Warning", message=events.rollout_halted(st.wave, why)))
        await self._note()
        if not early:
            self._resume = None
        await workflow.wait_condition(lambda: self._resume is not None or self._abort is not None)
        self._check_abort()
        self._upsert_phase(RolloutPhase.ROLLING)
        st.halted, st.halt_reason, st.failed_replacements = None, "", 0
        st.message = f"resumed: {self._resume}"
        self._workloads = []
        await self._note()

    async def _event(self, spec: EventSpec) -> None:
        """Best effort: an Event that cannot be recorded must not stop the rollout."""
        with contextlib.suppress(ActivityError):
            await workflow.execute_activity_method(EventActivities.record_events, EventsInput(events=[spec]),
                                                   start_to_close_timeout=timedelta(seconds=30),
                                                   retry_policy=RetryPolicy(maximum_attempts=3))

    async def _note(self) -> None:
        """Best effort: the NodePool's `nodeflow.dev/rollout` annotation says where the rollout is, for `nodeflow
        plan` (which reads no Temporal); written on each phase change, removed when the rollout ends."""
        st = self._status
        value, what = None, "remove"
        if st.phase not in (RolloutPhase.SUCCEEDED, RolloutPhase.ABORTED):
            phase = {RolloutPhase.HALTED: RolloutNotePhase.HALTED,
                     RolloutPhase.BAKING: RolloutNotePhase.BAKING}.get(st.phase, RolloutNotePhase.RUNNING)
            value = RolloutNote(generation=st.generation, wave=st.wave, waves=st.waves, phase=phase,
                                bake_until=st.bake_until, halt_reason=st.halt_reason,
                                halt=st.halts if phase == RolloutNotePhase.HALTED else 0).to_annotation()
            what = f"{phase.value} wave {st.wave}/{st.waves}"
        with contextlib.suppress(ActivityError):
            await workflow.execute_activity_method(RolloutActivities.annotate,
                                                   RolloutNoteInput(node_pool=st.node_pool, value=value),
                                                   start_to_close_timeout=timedelta(seconds=30),
                                                   retry_policy=RetryPolicy(maximum_attempts=3),
                                                   summary=f"rollout annotation of {st.node_pool}: {what}")

    async def _bake(self, seconds: float) -> None:
        st = self._status
        if seconds <= 0:
            return
        st.phase = RolloutPhase.BAKING
        st.bake_until = workflow.now() + timedelta(seconds=seconds)
        await self._note()
        await self._sleep(seconds, f"bake after wave {st.wave}")
        self._check_abort()
        st.phase, st.bake_until = RolloutPhase.ROLLING, None  # baked: the next wave's note says Running

    async def _sleep(self, seconds: float, summary: str = "wait") -> None:
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(lambda: self._abort is not None, timeout=timedelta(seconds=seconds),
                                          timeout_summary=summary)

    async def _plan(self, inp: RolloutInput, limit: int) -> RolloutPlan:
        return await workflow.execute_activity_method(
            RolloutActivities.plan, RolloutPlanInput(node_pool=inp.start.node_pool, limit=limit, at=workflow.now(),
                                                     catalog_path=inp.settings.catalog_path),
            start_to_close_timeout=PLAN_TIMEOUT, heartbeat_timeout=timedelta(seconds=30), retry_policy=STEP_RETRY,
            summary=f"plan wave {self._status.wave} of {inp.start.node_pool}")

    def _upsert_phase(self, phase: RolloutPhase, first: bool = False) -> None:
        """NodeflowPhase (and, once, NodeflowNodePool): `nodeflow rollout` finds a pool's rollout by them."""
        self._status.phase = phase
        pairs = [sa.PHASE.value_set(phase.value)]
        if first:
            pairs.append(sa.NODE_POOL.value_set(self._status.node_pool))
        workflow.upsert_search_attributes(pairs)

    def _check_abort(self) -> None:
        if self._abort is not None:
            raise _Aborted()

    async def _end(self, phase: RolloutPhase, message: str) -> RolloutResult:
        st = self._status
        self._upsert_phase(phase)
        st.message, st.bake_until = message, None
        await self._note()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return RolloutResult(phase=phase, disrupted=st.disrupted, message=message)


async def _result(handle: workflow.ChildWorkflowHandle) -> DisruptionResult | None:
    try:
        return await handle
    except ChildWorkflowError as exc:
        workflow.logger.warning("rollout disruption %s failed: %s", handle.id, exc)
        return None
