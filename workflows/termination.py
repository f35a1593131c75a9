"""TerminationWorkflow: the durable, steerable termination of one node (docs/architecture.md §5.1, semantics.md §9).

taint -> drain in tiers through the Eviction API (inside one heartbeating activity, so retries cost no
history) -> at `deadline - pod grace` delete the remaining pods, from any tier (the drain's own rounds since
Karpenter v1.15; workflow timers end its windows there, so the deadline survives crashes and time-skips in tests)
-> wait for VolumeAttachments -> terminate the instance -> remove the
Node finalizer, then the NodeClaim's. `force` and `cancel` are updates (with validators) and, under the same
names, signals for the Web UI (`force_signal`/`cancel_signal` still work); any other signal name is logged and
recorded in `progress` (docs/architecture.md §5.1).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from activities.cloud import CloudActivities
    from activities.kube import KubeActivities
    from activities.termination_markers import TerminationMarkerActivities
    from contracts import search_attributes as sa
    from contracts.errors import ErrorType
    from contracts.termination import (
        POINT_OF_NO_RETURN,
        CancelRequest,
        ControlResult,
        DeadlineRequest,
        DeletePodsInput,
        DrainedStatus,
        DrainInput,
        DrainResult,
        DrainSignal,
        FinalizeInput,
        ForceRequest,
        InstanceInput,
        PodState,
        PrepareInput,
        PrepareResult,
        TerminationInput,
        TerminationMarkersInput,
        TerminationPhase,
        TerminationProgress,
        TerminationResult,
        UntaintInput,
        VolumesInput,
        blocking_of,
        completion_summary,
    )
    from planning.lifecycle.drain import completion_hold_until, earlier_deadline

SHORT = timedelta(seconds=30)
DRAIN_WINDOW = timedelta(minutes=10)  # longest single drain activity before control returns to the workflow
HEARTBEAT = timedelta(seconds=5)
LOCAL_ACTIVITIES_PATCH = "short-activities-local"
NOTREADY_GONE_PATCH = "notready-instance-gone-fast-path"
MARKERS_PATCH = "nodeclaim-termination-markers"
SIGNAL_NAMES_PATCH = "signals-named-force-cancel"  # before it, signals `force`/`cancel` had no handler
SKIP_VOLUME_WAIT_PATCH = "skip-volume-wait-without-attachments"
# Every patch decided in the first activation, before any local activity (docs/decisions.md §18).
PATCHES_FIRST_PATCH = "patches-decided-before-local-activities"
# Karpenter v1.10's MinDrainTime (kubernetes-sigs/karpenter#2709, node/termination/controller.go; docs/semantics.md
# §9.5): a drain that ends sooner than this after it began drains once more when it is up.
MIN_DRAIN_PATCH = "min-drain-time"
MIN_DRAIN_TIME = timedelta(seconds=5)
# Karpenter v1.15 (kubernetes-sigs/karpenter#3063; docs/semantics.md §9.4): the drain activity deletes the pods due
# at the deadline in its rounds, from every tier; the workflow's timers only end its windows there (no delete_pods).
DEADLINE_IN_DRAIN_PATCH = "deadline-deletes-in-drain"
UPFRONT_PATCHES = (LOCAL_ACTIVITIES_PATCH, NOTREADY_GONE_PATCH, MARKERS_PATCH, SKIP_VOLUME_WAIT_PATCH,
                   SIGNAL_NAMES_PATCH, MIN_DRAIN_PATCH, DEADLINE_IN_DRAIN_PATCH)
# drain.jobs Wait (docs/semantics.md §15.8): asked for, up front, only by inputs that carry a CompletionWait.
COMPLETION_WAIT_PATCH = "drain-wait-for-completion"
# One marker stands for every patch above (docs/decisions.md §18): each patch asked for writes a marker and an upsert
# of TemporalChangeVersion, 16 of a new termination's 37 history events; executions that recorded the patches one
# by one still ask them one by one. Under it too, prepare writes the NodeClaim's markers (one local activity less).
ALL_PATCHES_PATCH = "termination-patches-in-one-marker"
# The drain heartbeats every second while a round waits for its calls (activities/kube.py); at 1,000 nodes deleted
# at once on a loaded machine a 5 s heartbeat timeout still cut off ~1,300 live drain attempts, each run again
# (docs/benchmarks.md, third round). Executions under this marker give the drain DRAIN_HEARTBEAT; its one marker
# stands for every patch above as ALL_PATCHES_PATCH does (same history size), which executions before it keep.
DRAIN_HEARTBEAT_PATCH = "termination-patches-in-one-marker-drain-heartbeat-15s"
DRAIN_HEARTBEAT = timedelta(seconds=15)
MAX_UNKNOWN_SIGNALS = 10  # the progress query keeps the latest few wrongly named signals
RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=500), maximum_interval=timedelta(seconds=10))


WORKFLOW_ID_PREFIX = "terminate-"


def workflow_id(node_uid: str) -> str:
    return f"{WORKFLOW_ID_PREFIX}{node_uid}"


def machine_key(workflow_id_: str) -> str | None:
    """The key (`node_uid` of TerminationInput) a `terminate-<key>` id was started with; None for other ids."""
    return workflow_id_[len(WORKFLOW_ID_PREFIX):] or None if workflow_id_.startswith(WORKFLOW_ID_PREFIX) else None


class _Interrupted(Exception):
    """Internal: force or cancel arrived while an activity or timer was pending."""


# Not sandboxed: re-importing this module into a fresh sandbox costs ~50 ms of CPU per execution, which
# dominated a 200-node burst (worker CPU 2.4x). Determinism is guarded instead by the house rules (no I/O,
# workflow.now(), models/activities passed through) and by tests/test_replay.py on recorded histories.
@workflow.defn(sandboxed=False)
class TerminationWorkflow:
    @workflow.init
    def __init__(self, inp: TerminationInput) -> None:
        self._inp = inp
        self._phase = TerminationPhase.PENDING
        self._started_at: datetime | None = None
        self._deadline: datetime | None = inp.deadline
        self._pods: list[PodState] = []
        self._user_deleting = inp.requested_by == "watcher"
        self._force_reason: str | None = None
        self._force_pending = False
        self._deadline_pending = False  # an earlier deadline arrived: re-plan the drain
        self._signalled_deadline: datetime | None = None
        self._cancel_reason: str | None = None
        self._cancel_rejected: str | None = None  # a cancel accepted before we learnt the node is being deleted
        self._node_pool = inp.node_pool
        self._claim_name: str | None = None  # the NodeClaim prepare found (the drain reads it by name)
        self._volume_attachments: int | None = None
        self._message = ""
        self._evicted = 0
        self._deleted = 0
        self._unknown_signals: list[str] = []
        self._patches: dict[str, bool] = {}
        self._lean = False  # ALL_PATCHES_PATCH: one patch marker, the claim marked by prepare
        self._completion_wait = False  # drain.jobs Wait applies to this execution (input and patch)

    # ---- messages ----------------------------------------------------------------------------------------

    @workflow.query
    def progress(self) -> TerminationProgress:
        return TerminationProgress(
            node_name=self._inp.node_name, node_pool=self._node_pool, reason=self._inp.reason, phase=self._phase,
            started_at=self._started_at, deadline=self._deadline, pods=list(self._pods),
            blocking_pdbs=sorted({p.blocking_pdb for p in self._pods if p.blocking_pdb}),
            forced=self._force_reason, cancelled=self._cancel_reason, user_deleting=self._user_deleting,
            message=self._message, blocking=blocking_of(self._pods), unknown_signals=list(self._unknown_signals),
            completion_until=self._completion_until(), waiting=self._waiting_text(),
        )

    @workflow.update
    def force(self, req: ForceRequest) -> ControlResult:
        self._accept_force(req)
        return ControlResult(phase=self._phase, message=f"forcing termination of {self._inp.node_name}")

    @force.validator
    def _validate_force(self, req: ForceRequest) -> None:
        problem = self._force_problem(req)
        if problem:
            raise ValueError(problem)

    @workflow.update
    async def cancel(self, req: CancelRequest) -> ControlResult:
        self._cancel_reason = req.reason or "cancelled"
        self._refresh_details()
        await workflow.wait_condition(
            lambda: self._phase == TerminationPhase.CANCELLED or self._cancel_rejected is not None)
        if self._cancel_rejected is not None:
            raise ApplicationError(self._cancel_rejected, type=ErrorType.CANCEL_REJECTED.value,
                                   non_retryable=True)
        return ControlResult(phase=self._phase, message=f"termination of {self._inp.node_name} cancelled; untainted")

    @cancel.validator
    def _validate_cancel(self, req: CancelRequest) -> None:
        problem = None if isinstance(req, CancelRequest) else 'a CancelRequest is required, e.g. {"reason": "why"}'
        problem = problem or self._cancel_problem()
        if problem:
            raise ValueError(problem)

    @workflow.signal
    def force_signal(self, req: ForceRequest) -> None:
        """Same as the `force` update, for the Web UI (a signal cannot be rejected, so a bad one is logged)."""
        problem = self._force_problem(req)
        if problem:
            workflow.logger.warning("force signal ignored: %s", problem)
            return
        self._accept_force(req)

    @workflow.signal
    def cancel_signal(self, req: CancelRequest) -> None:
        """Same as the `cancel` update, for the Web UI."""
        problem = None if isinstance(req, CancelRequest) else "a CancelRequest is required"
        problem = problem or self._cancel_problem()
        if problem:
            workflow.logger.warning("cancel signal ignored: %s", problem)
            self._message = f"cancel rejected: {problem}"
            return
        self._cancel_reason = req.reason or "cancelled"

    @workflow.signal(name="force")
    def force_by_signal(self, req: ForceRequest) -> None:
        """Signal `force`: the update's name, so the Web UI and the README say one name (same as `force_signal`)."""
        if self._signal_names_patched("force"):
            self.force_signal(req)

    @workflow.signal(name="cancel")
    def cancel_by_signal(self, req: CancelRequest) -> None:
        """Signal `cancel`: the update's name (same as `cancel_signal`)."""
        if self._signal_names_patched("cancel"):
            self.cancel_signal(req)

    @workflow.signal(dynamic=True)
    def unknown_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """A signal no handler has (e.g. a typo in the Web UI): Temporal accepts any name, so say it was ignored."""
        self._note_unknown_signal(name)

    def _signal_names_patched(self, name: str) -> bool:
        """Executions whose histories predate the `force`/`cancel` signals saw them do nothing; they still do."""
        if self._patched(SIGNAL_NAMES_PATCH):
            return True
        self._note_unknown_signal(name)
        return False

    def _note_unknown_signal(self, name: str) -> None:
        known = "signals: force, cancel (or force_signal, cancel_signal), tighten_deadline"
        workflow.logger.warning("signal %r ignored: no such signal (%s)", name, known,
                                extra={"node": self._inp.node_name})
        self._unknown_signals = [*self._unknown_signals, name][-MAX_UNKNOWN_SIGNALS:]
        self._message = f"signal {name!r} ignored: no such signal ({known})"
        self._refresh_details()

    @workflow.signal
    def tighten_deadline(self, req: DeadlineRequest) -> None:
        """An interruption's hard deadline (signal-with-start from the interruption intake): pods are then
        deleted so each gets its grace period before it, even when a graceful drain was already running."""
        self._signalled_deadline = earlier_deadline(self._signalled_deadline, req.deadline)
        if self._deadline != earlier_deadline(self._deadline, req.deadline):
            self._deadline = req.deadline
            self._deadline_pending = self._phase not in POINT_OF_NO_RETURN
            workflow.logger.info("deadline moved to %s (%s)", req.deadline.isoformat(), req.reason)

    @workflow.signal
    def drain_progress(self, sig: DrainSignal) -> None:
        """From the drain activity: which pods are left and which PDB blocks them (for `progress`)."""
        if self._phase == TerminationPhase.DRAINING:
            self._pods = list(sig.pods)
            self._refresh_details()

    def _force_problem(self, req: ForceRequest) -> str | None:
        if not isinstance(req, ForceRequest):  # e.g. null sent through an untyped handle
            return 'a ForceRequest is required, e.g. {"reason": "why"}'
        if not req.reason.strip():
            return "a reason is required to force a termination"
        if self._phase in POINT_OF_NO_RETURN:
            return f"nothing to force: {self._inp.node_name} is already in phase {self._phase}"
        if self._phase == TerminationPhase.CANCELLED or self._cancel_reason is not None:
            return f"termination of {self._inp.node_name} was cancelled"
        if self._force_reason is not None:
            return f"{self._inp.node_name} is already being forced ({self._force_reason})"
        return None

    def _accept_force(self, req: ForceRequest) -> None:
        self._force_reason = req.reason
        self._force_pending = True
        workflow.logger.info("force accepted", extra={"node": self._inp.node_name, "reason": req.reason})
        self._refresh_details()

    def _cancel_problem(self) -> str | None:
        name = self._inp.node_name
        if self._user_deleting:
            return (f"{name} is being deleted (it has a deletionTimestamp); a deletion cannot be undone, "
                    "only sped up with force")
        if self._phase in POINT_OF_NO_RETURN:
            return f"past the point of no return: {name} is in phase {self._phase} (instance termination started)"
        if self._phase == TerminationPhase.CANCELLED or self._cancel_reason is not None:
            return f"termination of {name} is already cancelled"
        return None

    # ---- main --------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: TerminationInput) -> TerminationResult:
        self._decide_patches()
        self._started_at = workflow.now()
        log = {"node": inp.node_name, "reason": inp.reason, "workflow_id": workflow.info().workflow_id}
        workflow.logger.info("termination started", extra=log)
        prep = await self._short(
            KubeActivities.prepare,
            PrepareInput(node_name=inp.node_name, node_claim_name=inp.node_claim_name, provider_id=inp.provider_id,
                         reason=inp.reason, cascade=inp.requested_by == "watcher", mark_claim=self._lean,
                         started_at=self._started_at if self._lean else None),
            f"taint {inp.node_name}, read pods and claim",
        )
        self._adopt(inp, prep)
        self._completion_wait = inp.completion_wait is not None and self._patched(COMPLETION_WAIT_PATCH)
        provider_id = inp.provider_id or prep.provider_id
        self._set_phase(TerminationPhase.DRAINING)
        if prep.node_exists and await self._instance_already_gone(prep, provider_id):
            prep = prep.model_copy(update={"node_exists": False})
        marked = prep.claim_marked or await self._mark_claim(prep, DrainedStatus.DRAINING if prep.node_exists else None)
        try:
            if prep.node_exists:
                drain_began = workflow.now()
                floor = self._drain_floor(prep, drain_began)
                await self._drain(floor)
                if floor is None:  # executions before the one-marker patch hold it with a timer
                    await self._min_drain_time(prep, drain_began)
                if marked and self._cancel_reason is None:
                    await self._mark_claim(prep, DrainedStatus.DRAINED)
                await self._await_volumes(prep.node_claim_name if prep.node_claim_exists else None)
        except _Interrupted:
            pass
        if self._cancel_reason is not None:
            return await self._cancelled(inp)

        # Point of no return: from here on cancel is rejected.
        instance_terminated = await self._terminate_instance(inp, prep, provider_id)
        self._set_phase(TerminationPhase.FINALIZING)
        await self._short(
            KubeActivities.finalize,
            FinalizeInput(node_name=inp.node_name, node_claim_name=prep.node_claim_name, reason=inp.reason,
                          started_at=prep.deleting_since or self._started_at),
            f"remove finalizers of {inp.node_name}",
        )
        self._pods = []
        self._set_phase(TerminationPhase.TERMINATED)
        workflow.logger.info("termination finished", extra=log)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return TerminationResult(node_name=inp.node_name, phase=self._phase, instance_terminated=instance_terminated,
                                 pods_evicted=self._evicted, pods_deleted=self._deleted)

    def _adopt(self, inp: TerminationInput, prep: PrepareResult) -> None:
        """Take what `prepare` found: pool, a user's deletion (which rejects a pending cancel), the deadline
        (an earlier signalled one wins), the pods and volume attachments to wait for."""
        self._node_pool = self._node_pool or prep.node_pool
        self._claim_name = prep.node_claim_name if prep.node_claim_exists else None
        self._user_deleting = self._user_deleting or prep.deleting_since is not None
        if self._user_deleting and self._cancel_reason is not None:
            self._cancel_rejected = self._cancel_problem() or "the node is being deleted"
            self._cancel_reason = None
        self._deadline = earlier_deadline(self._compute_deadline(inp, prep), self._signalled_deadline)
        self._pods = list(prep.pods)
        self._volume_attachments = prep.volume_attachments

    async def _terminate_instance(self, inp: TerminationInput, prep: PrepareResult, provider_id: str | None) -> bool:
        """Phase TerminatingInstance: terminate the machine (when there is one); True once it is going or gone."""
        self._set_phase(TerminationPhase.TERMINATING_INSTANCE)
        if not provider_id:
            return False
        res = await self._short(
            CloudActivities.terminate_instance, InstanceInput(
                provider_id=provider_id, node_name=inp.node_name,
                node_claim_name=prep.node_claim_name if prep.node_claim_exists else None),
            f"terminate {provider_id}", timeout=timedelta(minutes=2),
            remote_opts={"start_to_close_timeout": timedelta(minutes=10), "heartbeat_timeout": HEARTBEAT},
        )
        return res.state in ("shutting-down", "terminated", "gone")

    async def _instance_already_gone(self, prep: PrepareResult, provider_id: str | None) -> bool:
        """Karpenter's fast path (semantics.md §9.1): a NotReady node whose instance no longer exists has no kubelet
        to stop its pods, so a drain could only wait for the deadline; skip it and finish. Ready nodes (and
        histories recorded before this check) never ask."""
        if prep.node_ready is not False or not provider_id or not self._patched(NOTREADY_GONE_PATCH):
            return False
        res = await self._short(CloudActivities.instance_state,
                                InstanceInput(provider_id=provider_id, node_name=self._inp.node_name),
                                f"is {provider_id} still there?")
        if res.state in ("terminated", "gone"):
            self._message = f"instance {res.instance_id} is {res.state} and the node is NotReady: no drain"
            workflow.logger.info(self._message, extra={"node": self._inp.node_name})
            return True
        return False

    async def _mark_claim(self, prep: PrepareResult, drained: DrainedStatus | None) -> bool:
        """Karpenter's markers on the NodeClaim: termination-timestamp annotation, `Drained` condition.
        Executions that started before this existed (their histories) never write them."""
        if not prep.node_claim_exists or not prep.node_claim_name or not self._patched(MARKERS_PATCH):
            return False
        await self._short(
            TerminationMarkerActivities.mark_nodeclaim,
            TerminationMarkersInput(node_claim_name=prep.node_claim_name, drained=drained,
                                    since=prep.deleting_since or self._started_at),
            f"mark NodeClaim {prep.node_claim_name} " + (f"Drained={drained.value}" if drained else "terminating"),
        )
        return True

    def _compute_deadline(self, inp: TerminationInput, prep: PrepareResult) -> datetime | None:
        """Explicit deadline, else the NodeClaim's annotation, else deletion time + terminationGracePeriod."""
        if inp.deadline is not None:
            return inp.deadline
        if prep.termination_timestamp is not None:
            return prep.termination_timestamp
        grace = inp.grace_period if inp.grace_period is not None else prep.grace_period
        if grace is None:
            return None
        return (prep.deleting_since or self._started_at or workflow.now()) + grace

    # ---- drain -------------------------------------------------------------------------------------------

    async def _drain(self, floor: datetime | None = None) -> None:
        """Drain activities until the node is drained; `floor`: not drained before then (MinDrainTime, one-marker
        executions), unless forced."""
        inp = self._inp
        last_delete: datetime | None = None
        # decided up front; executions that ask for patches where they apply (before that patch) keep delete_pods
        in_drain = self._patches.get(DEADLINE_IN_DRAIN_PATCH, False)
        while True:
            if self._cancel_reason is not None:
                return
            now = workflow.now()
            if self._force_pending:
                self._force_pending = False
                await self._delete_pods(now, force=True)
            elif self._deadline is not None:
                due = [t for t in self._instants(last_delete) if t <= now]
                if due:
                    last_delete = max(due)
                    if not in_drain:  # else the drain started next deletes them in its first round
                        await self._delete_pods(now, force=False)
            upcoming = self._instants(last_delete)
            holding = self._holding(now)
            hold_end = self._completion_until() if holding else None
            window_end = min([now + DRAIN_WINDOW, *upcoming, *([hold_end] if hold_end else [])])
            res = await self._interruptible(
                KubeActivities.drain,
                DrainInput(node_name=inp.node_name, reason=inp.reason, return_by=window_end, deadline=self._deadline,
                           workflow_id=workflow.info().workflow_id, started_at=self._started_at,
                           wait_for_completion=holding, completion_until=hold_end, deadline_deletes=in_drain,
                           node_pool=self._node_pool, node_claim_name=self._claim_name,
                           drained_not_before=None if self._force_reason is not None else floor),
                start_to_close_timeout=DRAIN_WINDOW + timedelta(minutes=1),
                heartbeat_timeout=DRAIN_HEARTBEAT if self._patches.get(DRAIN_HEARTBEAT_PATCH) else HEARTBEAT,
                summary=f"drain {inp.node_name}" + (", Job pods left to finish" if holding else ""),
            )
            if res is None:
                continue
            assert isinstance(res, DrainResult)
            self._evicted += res.evicted
            self._deleted += res.deleted
            self._pods = list(res.pods)
            self._refresh_details()
            if res.drained or not res.node_exists:
                return
            remaining = window_end - workflow.now()
            if remaining > timedelta(0):
                await self._sleep(remaining, f"drain of {inp.node_name} blocked; retry at next deadline step")

    def _drain_floor(self, prep: PrepareResult, began: datetime) -> datetime | None:
        """One-marker executions hand Karpenter's MinDrainTime to the drain activity (`drained_not_before`): a wait
        there instead of a timer and a second drain activity here. None: no minimum, or the timer's path."""
        if not self._lean or not prep.node_claim_exists or not self._patched(MIN_DRAIN_PATCH):
            return None
        return began + (prep.min_drain_time if prep.min_drain_time is not None else MIN_DRAIN_TIME)

    async def _min_drain_time(self, prep: PrepareResult, began: datetime) -> None:
        """Karpenter's MinDrainTime: with a NodeClaim, the node counts as drained only once MIN_DRAIN_TIME has passed
        since its drain began, and the drain then runs again: a pod kube-scheduler bound in the moment before it saw
        the disrupted taint is evicted too, instead of being cut off by the instance's termination."""
        if not prep.node_claim_exists or not self._patched(MIN_DRAIN_PATCH) or self._cancel_reason is not None:
            return
        minimum = prep.min_drain_time if prep.min_drain_time is not None else MIN_DRAIN_TIME  # worker's, for tests
        left = began + minimum - workflow.now()
        if left <= timedelta(0):
            return
        await self._sleep(left, f"minimum drain time of {self._inp.node_name}")
        await self._drain()

    def _completion_until(self) -> datetime | None:
        """When the drain.jobs Wait hold ends: the start plus maxWait or the (current) deadline, whichever is first."""
        wait = self._inp.completion_wait
        if not self._completion_wait or wait is None or self._started_at is None:
            return None
        return completion_hold_until(self._started_at, wait.max_wait, self._deadline)

    def _holding(self, now: datetime) -> bool:
        """Run-to-completion pods are left alone now: the hold applies, is not over, and no force arrived."""
        if not self._completion_wait or self._force_reason is not None:
            return False
        until = self._completion_until()
        return until is None or now < until

    def _waiting_text(self) -> str | None:
        if not self._completion_wait or self._phase != TerminationPhase.DRAINING:
            return None
        return completion_summary(self._pods, workflow.now(), self._completion_until())

    def _instants(self, after: datetime | None) -> list[datetime]:
        """When pods must be deleted so each still gets its full grace before the deadline (docs/semantics.md §9.4)."""
        if self._deadline is None:
            return []
        times = {self._deadline - timedelta(seconds=max(p.grace_seconds, 0)) for p in self._pods}
        times.add(self._deadline)
        return sorted(t for t in times if after is None or t > after)

    async def _delete_pods(self, now: datetime, force: bool) -> None:
        res = await self._short(
            KubeActivities.delete_pods,
            DeletePodsInput(node_name=self._inp.node_name, at=now, deadline=self._deadline, force=force,
                            reason=self._force_reason if force else self._inp.reason),
            ("force-delete" if force else "deadline-delete") + f" pods on {self._inp.node_name}",
        )
        self._deleted += len(res.deleted)

    async def _await_volumes(self, claim: str | None = None) -> None:
        if self._force_reason is not None:
            return
        # A tainted node gains no attachments: none at prepare time means nothing to wait for (saves an activity).
        if self._patched(SKIP_VOLUME_WAIT_PATCH) and self._volume_attachments == 0:
            return
        self._set_phase(TerminationPhase.AWAITING_VOLUMES)
        while True:
            res = await self._interruptible(
                KubeActivities.wait_volumes, VolumesInput(node_name=self._inp.node_name, deadline=self._deadline,
                                                          node_claim_name=claim),
                start_to_close_timeout=DRAIN_WINDOW + timedelta(minutes=1), heartbeat_timeout=HEARTBEAT,
                summary=f"wait for volume detachment from {self._inp.node_name}",
            )
            if res is not None or self._cancel_reason is not None or self._force_reason is not None:
                return

    # ---- helpers -----------------------------------------------------------------------------------------

    def _decide_patches(self) -> None:
        """Take every patch decision before the first local activity. A patch asked for after one could land in
        the next workflow task when the activity finished just as its task completed (a query arriving then
        does it); replay then met the marker where the code had not asked and failed (docs/decisions.md §18).
        New executions record one marker for all of them; histories from before keep asking as they did."""
        ids = (PATCHES_FIRST_PATCH, *UPFRONT_PATCHES,
               *((COMPLETION_WAIT_PATCH,) if self._inp.completion_wait is not None else ()))
        if workflow.patched(DRAIN_HEARTBEAT_PATCH):
            self._patches, self._lean = dict.fromkeys((*ids, ALL_PATCHES_PATCH, DRAIN_HEARTBEAT_PATCH), True), True
        elif workflow.patched(ALL_PATCHES_PATCH):
            self._patches, self._lean = dict.fromkeys(ids, True), True
        elif workflow.patched(PATCHES_FIRST_PATCH):
            self._patches = {patch_id: workflow.patched(patch_id) for patch_id in ids[1:]}

    def _patched(self, patch_id: str) -> bool:
        decided = self._patches.get(patch_id)
        return workflow.patched(patch_id) if decided is None else decided

    async def _short(self, fn: Callable[..., Any], arg: Any, summary: str, timeout: timedelta = SHORT,
                     remote_opts: dict[str, Any] | None = None) -> Any:
        """A short, idempotent activity. New executions run it as a local activity: one marker event and no
        extra workflow task instead of six events, which keeps history and server load per node small."""
        if self._patched(LOCAL_ACTIVITIES_PATCH):
            return await workflow.execute_local_activity_method(fn, arg, start_to_close_timeout=timeout,
                                                                retry_policy=RETRY, summary=summary)
        opts = remote_opts or {"start_to_close_timeout": timeout}
        return await workflow.execute_activity_method(fn, arg, retry_policy=RETRY, summary=summary, **opts)

    def _interrupted(self) -> bool:
        return self._force_pending or self._cancel_reason is not None or self._deadline_pending

    async def _interruptible(self, fn: Callable[..., Any], arg: Any, **opts: Any) -> Any:
        """Run an activity; on force/cancel, cancel it, wait until it stopped, and return None (the caller
        re-plans). Waiting matters: a drain still evicting after a cancel untainted the node would be wrong."""
        self._deadline_pending = False  # the caller built `arg` with the current deadline
        handle = workflow.start_activity_method(fn, arg, retry_policy=RETRY,
                                                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                                                **opts)
        await workflow.wait_condition(lambda: handle.done() or self._interrupted())
        if handle.done():
            return handle.result()
        handle.cancel()
        with contextlib.suppress(ActivityError, asyncio.CancelledError):
            await handle
        return None

    async def _sleep(self, duration: timedelta, summary: str) -> None:
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(self._interrupted, timeout=duration, timeout_summary=summary)

    async def _cancelled(self, inp: TerminationInput) -> TerminationResult:
        await self._short(
            KubeActivities.untaint, UntaintInput(node_name=inp.node_name, reason=self._cancel_reason or "",
                                                 cancelled_at=workflow.now()),
            f"untaint {inp.node_name}",
        )
        self._pods = []
        self._set_phase(TerminationPhase.CANCELLED)
        workflow.logger.info("termination cancelled", extra={"node": inp.node_name, "reason": self._cancel_reason})
        await workflow.wait_condition(workflow.all_handlers_finished)
        return TerminationResult(node_name=inp.node_name, phase=self._phase, pods_evicted=self._evicted,
                                 pods_deleted=self._deleted, message=self._cancel_reason or "")

    def _set_phase(self, phase: TerminationPhase) -> None:
        first = self._phase == TerminationPhase.PENDING
        self._phase = phase
        updates = [sa.PHASE.value_set(phase.value)]
        if first:
            updates.append(sa.NODE.value_set(self._inp.node_name))
            updates.append(sa.REASON.value_set(self._inp.reason))
            if self._node_pool:
                updates.append(sa.NODE_POOL.value_set(self._node_pool))
        workflow.upsert_search_attributes(updates)
        self._refresh_details()

    def _refresh_details(self) -> None:
        parts = [f"{self._phase.value} {self._inp.node_name} ({self._inp.reason})"]
        if self._phase == TerminationPhase.DRAINING:
            parts.append(f"{len(self._pods)} pods left")
            blocking = blocking_of(self._pods)
            if blocking:
                parts.append("blocked by " + ", ".join(blocking))
            waiting = self._waiting_text()
            if waiting:
                parts.append(waiting)
        if self._deadline is not None:
            parts.append(f"deadline {self._deadline.isoformat()}")
        if self._force_reason is not None:
            parts.append(f"forced: {self._force_reason}")
        if self._cancel_reason is not None:
            parts.append(f"cancel: {self._cancel_reason}")
        if self._unknown_signals:
            parts.append("ignored unknown signal(s) " + ", ".join(self._unknown_signals))
        workflow.set_current_details(" · ".join(parts))
