"""ProvisioningWorkflow: launch the nodes one batch of pending pods needs, durably (docs/architecture.md §5.5), or
a static NodePool's scale-up (`static`: NodeClaims of its template, planned by the planner pass; docs/semantics.md §14).

re-plan the batch on the live cluster (an activity; pods bound or gone since the batch closed launch nothing, pods
no NodePool serves get an Event) -> launch each NodeClaim through the disruption's idempotent launch activity (its
instance types cheapest first; an offering without capacity passes to the next) -> every offering out of capacity:
say so on the NodePool, back off (doubling) and relaunch, at most `ice_attempts` rounds -> wait until each node is
Ready -> one not Ready in time (or whose NodeClaim vanished) is deleted with its instance, so nothing leaks.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.events import EventActivities, nominated_spec
    from activities.provisioning import ProvisioningActivities
    from activities.provisioning_planner import ProvisioningPlanner
    from api import events
    from api.events import EventReason
    from contracts import search_attributes as sa
    from contracts.disruption import (
        EventsInput,
        EventSpec,
        LaunchedReplacement,
        LaunchInput,
        ReplacementStatus,
        StaticScaleUp,
        StatusInput,
    )
    from contracts.errors import ErrorType
    from contracts.provisioning import (
        LAUNCH_REASON,
        STATIC_LAUNCH_REASON,
        LaunchFailedInput,
        NodeClaimLaunch,
        PodRef,
        ProvisioningInput,
        ProvisioningPhase,
        ProvisioningPlan,
        ProvisioningPlanInput,
        ProvisioningResult,
        ProvisioningSettings,
    )
    from workflows.retries import (
        LAUNCH_THROUGH_OUTAGE_PATCH,
        LONG_CALL_HEARTBEAT,
        READ_LIMIT,
        READ_RETRY,
        SHORT,
        until_limit,
    )
    from workflows.retries import STEP_RETRY as RETRY

STATIC_CAPACITY_PATCH = "static-capacity"  # runs recorded before static NodePools never take the static path
# A NodeClaim launched for CapacityBuffer headroom alone (no real pod) says so; runs before said "0 pending pod(s)".
HEADROOM_EVENT_PATCH = "headroom-launch-event"

# A launch is a few quick EC2 calls (idempotent by ClientToken and tags); a short limit means a worker killed
# mid-launch costs the batch at most this long before another worker retries it.
LAUNCH = timedelta(seconds=60)
LAUNCH_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                           maximum_attempts=5, non_retryable_error_types=[
                               ErrorType.LAUNCH_FAILED.value, ErrorType.INSUFFICIENT_CAPACITY.value,
                               ErrorType.NODE_CLASS_NOT_READY.value])


@workflow.defn
class ProvisioningWorkflow:
    def __init__(self) -> None:
        self._phase = ProvisioningPhase.PLANNING
        self._launched: list[LaunchedReplacement] = []
        self._ready: set[str] = set()
        self._no_capacity: list[str] = []
        self._errors: list[str] = []
        self._static: StaticScaleUp | None = None
        self._uids: dict[str, str] = {}  # pod key -> uid, for the Events on the pods of a launch

    @workflow.query
    def progress(self) -> ProvisioningResult:
        return ProvisioningResult(outcome=self._phase, launched=list(self._launched), ready=sorted(self._ready),
                                  no_capacity=list(self._no_capacity), message="; ".join(self._errors))

    @workflow.run
    async def run(self, inp: ProvisioningInput) -> ProvisioningResult:
        s = inp.settings
        self._uids = {p.key: p.uid for p in inp.pods}
        self._static = inp.static if inp.static is not None and workflow.patched(STATIC_CAPACITY_PATCH) else None
        reason = STATIC_LAUNCH_REASON if self._static is not None else LAUNCH_REASON
        workflow.upsert_search_attributes([sa.REASON.value_set(reason)])
        self._set_phase(ProvisioningPhase.PLANNING)
        plan = static_plan(self._static) if self._static is not None else await self._plan(inp)
        if not plan.launches:
            why = (f"nothing to launch: {plan.scheduled} fit existing nodes, {plan.nominated} launching NodeClaims, "
                   f"{len(plan.unservable)} no NodePool serves, {plan.gone} no longer pending")
            return self._finish(ProvisioningPhase.SUCCEEDED, why, plan)
        pools = sorted({launch.node_pool for launch in plan.launches})
        workflow.upsert_search_attributes([sa.NODE_POOL.value_set(pools[0])])
        self._set_phase(ProvisioningPhase.LAUNCHING)
        results = await asyncio.gather(*(self._launch(i, launch, s) for i, launch in enumerate(plan.launches)))
        self._launched = [r for r in results if r is not None]
        await self._record_launched(plan.launches, results)
        deleted = await self._wait_ready(s) if self._launched else []
        return self._conclude(plan, deleted)

    async def _plan(self, inp: ProvisioningInput) -> ProvisioningPlan:
        """Re-plan the batch's pods on the live cluster."""
        return await workflow.execute_activity_method(
            ProvisioningPlanner.plan,
            ProvisioningPlanInput(pods=inp.pods, at=workflow.now(), batch_id=workflow.info().workflow_id,
                                  catalog_path=inp.settings.catalog_path),
            start_to_close_timeout=timedelta(seconds=60), schedule_to_close_timeout=READ_LIMIT,
            heartbeat_timeout=LONG_CALL_HEARTBEAT, retry_policy=READ_RETRY,
            summary=f"plan {len(inp.pods)} pending pod(s)")

    def _conclude(self, plan: ProvisioningPlan, deleted: list[str]) -> ProvisioningResult:
        ready = len(self._ready)
        message = f"{ready} of {len(plan.launches)} NodeClaim(s) Ready"
        if self._no_capacity:
            message += f"; no capacity in {', '.join(sorted(set(self._no_capacity)))}"
        if deleted:
            message += f"; deleted (not Ready in time or gone): {', '.join(deleted)}"
        if self._errors:
            message += f"; {'; '.join(self._errors)}"
        outcome = ProvisioningPhase.SUCCEEDED if ready == len(plan.launches) else (
            ProvisioningPhase.PARTIAL if ready else ProvisioningPhase.FAILED)
        return self._finish(outcome, message, plan, deleted)

    async def _launch(self, index: int, launch: NodeClaimLaunch, s: ProvisioningSettings) -> LaunchedReplacement | None:
        """One NodeClaim. All offerings out of capacity: an Event, a doubling backoff, a new round (a new NodeClaim
        key: the refused one was deleted); after `ice_attempts` rounds the batch gives up on this NodeClaim."""
        info = workflow.info()
        through_outage = workflow.patched(LAUNCH_THROUGH_OUTAGE_PATCH)
        for round_ in range(max(s.ice_attempts, 1)):
            key = f"{info.workflow_id}/{info.run_id}/{index}" + (f"/r{round_}" if round_ else "")
            try:
                return await workflow.execute_activity_method(
                    ProvisioningActivities.launch_replacement,
                    LaunchInput(key=key, node_pool=launch.node_pool, replacement=launch.replacement,
                                reason=LAUNCH_REASON),
                    start_to_close_timeout=timedelta(seconds=s.launch_timeout_seconds),
                    heartbeat_timeout=LONG_CALL_HEARTBEAT,
                    schedule_to_close_timeout=READ_LIMIT if through_outage else None,
                    retry_policy=until_limit(LAUNCH_RETRY) if through_outage else LAUNCH_RETRY,
                    summary=f"launch {launch.replacement.instance_types[:3]} for {len(launch.pods)} pod(s)")
            except ActivityError as exc:
                cause = exc.cause
                if not (isinstance(cause, ApplicationError) and cause.type == ErrorType.INSUFFICIENT_CAPACITY.value):
                    self._errors.append(f"launch in {launch.node_pool} failed: {_cause(exc)}")
                    return None
                last = round_ + 1 >= s.ice_attempts
                backoff = None if last else s.ice_backoff_seconds * 2 ** round_
                await self._say_no_capacity(launch, cause, backoff)
                if backoff is None:
                    self._no_capacity.append(launch.node_pool)
                    return None
                await workflow.sleep(timedelta(seconds=backoff), summary="back off: no capacity")
        return None

    async def _say_no_capacity(self, launch: NodeClaimLaunch, cause: ApplicationError,
                               retry_seconds: float | None) -> None:
        """On the NodePool, and (v1.15) on the launch's pods. The launch's details: the refused offerings, then the
        refused NodeClaim's name (absent from an older worker's)."""
        details = cause.details or ()
        try:
            await workflow.execute_activity_method(
                ProvisioningPlanner.no_capacity,
                LaunchFailedInput(node_pool=launch.node_pool, offerings=list(details[0]) if details else [],
                                  retry_seconds=retry_seconds, batch_id=workflow.info().workflow_id,
                                  pods=[PodRef(key=k, uid=self._uids.get(k, "")) for k in launch.pods],
                                  node_claim=str(details[1]) if len(details) > 1 else "", error=cause.message),
                start_to_close_timeout=SHORT, retry_policy=RetryPolicy(maximum_attempts=3))
        except ActivityError as exc:  # an Event is best effort
            workflow.logger.warning("could not record the no-capacity event: %s", _cause(exc))

    async def _wait_ready(self, s: ProvisioningSettings) -> list[str]:
        """Poll until every launched node is Ready; delete (instance included) what is not Ready by the deadline or
        lost its NodeClaim, so a failed launch never leaks an instance. Returns the NodeClaims deleted."""
        self._set_phase(ProvisioningPhase.WAITING_READY)
        deadline = workflow.now() + timedelta(seconds=s.ready_timeout_seconds)
        waiting = list(self._launched)
        dropped: list[LaunchedReplacement] = []
        while waiting:
            started = workflow.now()
            wait = max(min(s.ready_poll_seconds, (deadline - started).total_seconds()), 0.0)
            statuses: list[ReplacementStatus] = await workflow.execute_activity_method(
                ProvisioningActivities.replacement_status, StatusInput(replacements=waiting, wait_seconds=wait),
                start_to_close_timeout=timedelta(seconds=wait) + SHORT, heartbeat_timeout=LONG_CALL_HEARTBEAT,
                retry_policy=RETRY,
                summary="wait for the new nodes to be Ready")
            self._ready |= {st.node_claim for st in statuses if st.ready}
            gone = {st.node_claim for st in statuses if st.gone}
            dropped += [r for r in waiting if r.node_claim in gone]
            waiting = [r for r in waiting if r.node_claim not in self._ready and r.node_claim not in gone]
            if waiting and workflow.now() >= deadline:
                dropped += waiting
                waiting = []
            rest = min(wait - (workflow.now() - started).total_seconds(), (deadline - workflow.now()).total_seconds())
            if waiting and rest > 0:
                await workflow.sleep(timedelta(seconds=rest))
        for r in dropped:
            await workflow.execute_activity_method(
                ProvisioningActivities.delete_replacement, r, start_to_close_timeout=LAUNCH,
                heartbeat_timeout=LONG_CALL_HEARTBEAT, retry_policy=RETRY)
        return [r.node_claim for r in dropped]

    async def _record_launched(self, launches: list[NodeClaimLaunch],
                               results: list[LaunchedReplacement | None]) -> None:
        headroom = any(not launch.pods for launch in launches) and self._static is None \
            and workflow.patched(HEADROOM_EVENT_PATCH)
        specs = [EventSpec(kind="NodeClaim", name=r.node_claim, uid=r.uid, reason=EventReason.PROVISIONING_LAUNCHED,
                           message=events.static_launched(launch.node_pool) if self._static is not None
                           else events.headroom_launched() if headroom and not launch.pods
                           else events.provisioning_launched(len(launch.pods)))
                 for launch, r in zip(launches, results, strict=True) if r is not None]
        specs += [nominated_spec(pod, r.node_claim)  # Karpenter's provisioner: each pod on its new NodeClaim
                  for launch, r in zip(launches, results, strict=True) if r is not None for pod in launch.pods]
        if not specs:
            return
        try:
            await workflow.execute_activity_method(
                EventActivities.record_events, EventsInput(events=specs), start_to_close_timeout=SHORT,
                retry_policy=RetryPolicy(maximum_attempts=3))
        except ActivityError as exc:
            workflow.logger.warning("could not record events: %s", _cause(exc))

    def _finish(self, outcome: ProvisioningPhase, message: str, plan: ProvisioningPlan,
                deleted: list[str] | None = None) -> ProvisioningResult:
        self._set_phase(outcome)
        return ProvisioningResult(outcome=outcome, message=message, launched=list(self._launched),
                                  ready=sorted(self._ready), deleted=deleted or [],
                                  no_capacity=sorted(set(self._no_capacity)), unservable=plan.unservable)

    def _set_phase(self, phase: ProvisioningPhase) -> None:
        self._phase = phase
        workflow.upsert_search_attributes([sa.PHASE.value_set(phase.value)])


def static_plan(static: StaticScaleUp) -> ProvisioningPlan:
    """A static NodePool's scale-up as a plan: `count` NodeClaims of its template, no pods."""
    return ProvisioningPlan(launches=[NodeClaimLaunch(node_pool=static.node_pool, replacement=static.replacement)
                                      for _ in range(static.count)])


def _cause(exc: BaseException) -> str:
    while isinstance(exc, ActivityError) and exc.cause is not None:
        exc = exc.cause
    return str(exc)
