"""DisruptionWorkflow: carry out one planner command durably (docs/architecture.md §5.2).

validate after a delay -> taint candidates -> launch replacements -> wait until Ready (timeout)
-> on failure, timeout or cancel: untaint and delete replacements that never became Ready
-> otherwise delete the candidates (one TerminationWorkflow each) and wait for them.
Cancel: update `cancel`, or signal `cancel` (also `request_cancel`); other signal names are logged and recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from datetime import timedelta
from enum import StrEnum

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from activities.candidates import CandidateActivities
    from activities.events import EventActivities
    from activities.planning_runner import MEMO_PLACEMENTS, PlanningActivities
    from activities.provisioning import ProvisioningActivities
    from api import events
    from api.events import EventReason
    from contracts import search_attributes as sa
    from contracts.disruption import (
        NO_RETURN_PHASES,
        AwaitTerminationsInput,
        CancelHold,
        DisruptionCommand,
        DisruptionInput,
        DisruptionPhase,
        DisruptionProgress,
        DisruptionResult,
        DisruptionSettings,
        DriftOutcomeInput,
        EventsInput,
        EventSpec,
        LaunchedReplacement,
        LaunchInput,
        ReplacementStatus,
        StatusInput,
        TaintInput,
        TerminationsInput,
        ValidateInput,
        ValidationResult,
    )
    from contracts.errors import ErrorType
    from contracts.policy import NotifyKind
    from contracts.policy_controls import DrainSpec
    from planning.disruption.method_names import DRIFT_METHODS, MethodName
    from workflows import disruption_policy_steps as policy_steps
    from workflows import summaries
    from workflows.retries import LAUNCH_THROUGH_OUTAGE_PATCH, LONG_CALL_HEARTBEAT, READ_LIMIT, SHORT, until_limit
    from workflows.retries import STEP_RETRY as RETRY

LAUNCH = timedelta(minutes=2)
SIGNAL_NAMES_PATCH = "signal-named-cancel"  # before it, signal `cancel` had no handler
MAX_UNKNOWN_SIGNALS = 10
UNVALIDATED_PATCH = "drift-not-validated"  # commands recorded before it validated drift too
# Node repair as a method (MethodName.REPAIR): replace-then-drain like drift, never validated (the
# node is unhealthy now, and nothing about consolidation's decision applies). Recorded before it: no Repair command.
REPAIR_METHOD_PATCH = "repair-method"
# Drift commands record a failed replacement (the pool's drift back-off) and a Ready one (clears it); commands
# recorded before it record neither (planning/policies/drift_backoff.py).
DRIFT_BACKOFF_PATCH = "drift-backoff"
# A consolidation whose replacement validation found unneeded is carried out as the delete it handed back
# (docs/semantics.md §5.8); recorded before it, no validation handed one back.
VALIDATED_AS_DELETE_PATCH = "validated-as-delete"
# A Temporal-level cancel met inside an activity (resolved as an ActivityError caused by a CancelledError) ends the
# command cancelled, as one met between activities does; recorded before it, it ended as a failed activity.
CANCEL_IN_ACTIVITY_PATCH = "cancel-in-activity"
# Launch failures that retrying cannot fix (no capacity, bad request) roll back at once.
SHORT_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                          maximum_attempts=3)
LAUNCH_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                           maximum_attempts=5, non_retryable_error_types=[ErrorType.LAUNCH_FAILED.value])


class RollbackCause(StrEnum):
    """Why a disruption is undone: a cancel ends it as Cancelled, anything else as RolledBack."""

    CANCELLED = "Cancelled"
    ACTIVITY_FAILED = "ActivityFailed"
    LAUNCH_FAILED = "LaunchFailed"
    REPLACEMENT_GONE = "ReplacementGone"
    NOT_READY = "NotReady"


# the rollbacks that are a drift replacement's failure (a cancel or a failed taint is not)
REPLACEMENT_FAILURES = frozenset({RollbackCause.LAUNCH_FAILED, RollbackCause.NOT_READY,
                                  RollbackCause.REPLACEMENT_GONE})


class _Rollback(Exception):
    """Internal: the command cannot complete; undo what was done. `cause` decides the outcome, not the text."""

    def __init__(self, cause: RollbackCause, message: str) -> None:
        super().__init__(message)
        self.cause = cause


@workflow.defn
class DisruptionWorkflow:
    def __init__(self) -> None:
        self._input: DisruptionInput | None = None
        self._phase = DisruptionPhase.PENDING
        self._replacements: list[LaunchedReplacement] = []
        self._ready: set[str] = set()
        self._deadline = None
        self._cancel_reason: str | None = None
        self._error: str | None = None
        self._policy = None  # the pool's DisruptionPolicy controls, for executions past POLICY_PATCH
        self._approved: str | None = None  # `approve`: a person acked the pre-disruption hook
        self._unknown_signals: list[str] = []
        self._note: str | None = None  # DisruptionProgress.note: set when validation dropped the replacement

    # ---- messages -------------------------------------------------------------------------------------------

    @workflow.query
    def progress(self) -> DisruptionProgress:
        cmd = self._input.command if self._input else None
        return DisruptionProgress(
            phase=self._phase,
            method=cmd.method if cmd else "",
            reason=cmd.reason if cmd else "",
            node_pool=cmd.node_pool if cmd else "",
            nodes=[n.name for n in cmd.nodes] if cmd else [],
            replacements=list(self._replacements),
            ready=sorted(self._ready),
            ready_deadline=self._deadline,
            cancel_requested=self._cancel_reason is not None,
            error=self._error,
            unknown_signals=list(self._unknown_signals),
            note=self._note,
        )

    @workflow.update
    def cancel(self, reason: str) -> str:
        """Stop the command and roll back; answers the phase at which it was cancelled."""
        self._cancel_reason = reason or "cancelled"
        return self._phase.value

    @cancel.validator
    def _validate_cancel(self, reason: str) -> None:
        if self._phase in NO_RETURN_PHASES:
            raise ApplicationError(f"cannot cancel: disruption is {self._phase.value}; candidates are being deleted")

    @workflow.signal
    def request_cancel(self, reason: str) -> None:
        """Fire-and-forget cancel; ignored once the candidates are being deleted."""
        if self._phase not in NO_RETURN_PHASES:
            self._cancel_reason = reason or "cancelled"

    @workflow.signal(name="cancel")
    def cancel_by_signal(self, reason: str) -> None:
        """Signal `cancel`: the update's name, for the Web UI (same as `request_cancel`). Executions whose
        histories predate it saw it do nothing, and still do."""
        if workflow.patched(SIGNAL_NAMES_PATCH):
            self.request_cancel(reason)
        else:
            self.unknown_signal("cancel", [])

    @workflow.signal(dynamic=True)
    def unknown_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """A signal no handler has (e.g. a typo in the Web UI): Temporal accepts any name, so say it was ignored."""
        workflow.logger.warning("signal %r ignored: DisruptionWorkflow has no such signal", name)
        self._unknown_signals = [*self._unknown_signals, name][-MAX_UNKNOWN_SIGNALS:]

    @workflow.update
    def approve(self, reason: str) -> str:
        """Ack the pre-disruption hook by hand (`nodeflow approve NODE`): the disruption goes on."""
        self._approved = reason or "approved"
        return f"disruption of {', '.join(self.progress().nodes)} approved"

    @approve.validator
    def _validate_approve(self, reason: str) -> None:
        if self._phase not in (DisruptionPhase.PENDING, DisruptionPhase.VALIDATING):
            raise ApplicationError(f"nothing to approve: disruption is {self._phase.value}")

    @workflow.signal
    def approve_signal(self, reason: str) -> None:
        self._approved = reason or "approved"

    # ---- run ------------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: DisruptionInput) -> DisruptionResult:
        self._input = inp
        cmd = inp.command
        workflow.upsert_search_attributes([
            sa.NODE.value_set(cmd.nodes[0].name),
            sa.NODE_POOL.value_set(cmd.node_pool),
            sa.REASON.value_set(cmd.reason),
        ])

        self._set_phase(DisruptionPhase.VALIDATING)
        if (cmd.method in DRIFT_METHODS and workflow.patched(UNVALIDATED_PATCH)) or \
                (cmd.method == MethodName.REPAIR and workflow.patched(REPAIR_METHOD_PATCH)):
            if self._cancel_reason is not None:
                return await self._finish(DisruptionPhase.CANCELLED,
                                          f"cancelled before tainting: {self._cancel_reason}")
        else:
            invalid = await self._validate(inp)
            if invalid is not None:
                return invalid
            cmd = inp.command  # validation may have handed back the delete to carry out instead

        if inp.policy is not None and workflow.patched(policy_steps.POLICY_PATCH):
            self._policy = inp.policy
            abandoned = await self._policy_gate(inp)
            if abandoned is not None:
                return abandoned

        self._set_phase(DisruptionPhase.TAINTING)
        try:
            await workflow.execute_activity_method(
                CandidateActivities.taint_candidates, TaintInput(nodes=cmd.nodes, reason=cmd.reason),
                start_to_close_timeout=SHORT, retry_policy=RETRY)
            await self._launch_and_wait(inp)
            if cmd.replacements:
                await self._drift_outcome(failed=False)
        except ActivityError as exc:  # e.g. a candidate vanished while being tainted: undo what was done
            if isinstance(exc.cause, CancelledError) and workflow.patched(CANCEL_IN_ACTIVITY_PATCH):
                # nothing here cancels its own activities: this is the workflow's cancel, met while one ran
                await self._undo_for_cancel()
                raise asyncio.CancelledError from exc
            self._error = f"{self._phase.value} failed: {_cause(exc)}"
            return await self._rollback(RollbackCause.ACTIVITY_FAILED, self._error)
        except _Rollback as exc:
            self._error = str(exc)
            return await self._rollback(exc.cause, str(exc))
        except asyncio.CancelledError:
            await self._undo_for_cancel()
            raise

        return await self._terminate_candidates(inp)

    async def _undo_for_cancel(self) -> None:
        """A Temporal-level cancel (UI, CLI): undo as the cancel update would; the caller then ends as cancelled."""
        self._cancel_reason = self._cancel_reason or "workflow cancelled"
        await asyncio.shield(asyncio.ensure_future(
            self._rollback(RollbackCause.CANCELLED, f"cancelled: {self._cancel_reason}")))

    async def _validate(self, inp: DisruptionInput) -> DisruptionResult | None:
        """Karpenter's command validation: after the delay, re-plan and require the same decision. Returns the
        result of a command that ends here (cancelled during the delay, or no longer valid), else None."""
        cmd, s = inp.command, inp.settings
        await self._wait_for_cancel(s.validation_delay_seconds, "validation delay")
        if self._cancel_reason is not None:
            return await self._finish(DisruptionPhase.CANCELLED, f"cancelled before tainting: {self._cancel_reason}")
        verdict: ValidationResult = await workflow.execute_activity_method(
            PlanningActivities.validate_command,
            ValidateInput(command=cmd, at=workflow.now(), own_workflow_id=workflow.info().workflow_id,
                          catalog_path=s.catalog_path),
            start_to_close_timeout=timedelta(minutes=2), heartbeat_timeout=timedelta(seconds=30), retry_policy=RETRY)
        if not verdict.valid:
            return await self._finish(DisruptionPhase.INVALID, f"validation failed: {verdict.reason}")
        if verdict.command is not None and workflow.patched(VALIDATED_AS_DELETE_PATCH):
            self._carry_out_instead(inp, verdict.command)
        return None

    def _carry_out_instead(self, inp: DisruptionInput, instead: DisruptionCommand) -> None:
        """Validation found the candidates' pods fit on the other nodes: delete them without the planned replacement
        (docs/semantics.md §5.8). The memo's placements become the delete's, so the validations and passes that
        reserve in-flight commands' pods reserve the room these pods will take. Its Event is recorded with the
        candidates' DisruptionTerminating ones."""
        inp.command = instead
        workflow.upsert_memo({MEMO_PLACEMENTS: instead.placements})
        self._note = events.WITHOUT_REPLACEMENT
        self._refresh_details()

    async def _policy_gate(self, inp: DisruptionInput) -> DisruptionResult | None:
        """The pool's pre-disruption hook (and its ack) before anything is tainted, then `started`; returns the
        result of a disruption abandoned for want of an ack."""
        cmd, hook = inp.command, inp.policy.pre_disruption
        if hook is not None and not await policy_steps.pre_disruption(hook, cmd, lambda: self._approved is not None):
            why = events.disruption_abandoned(timedelta(seconds=hook.ack_timeout_seconds), inp.policy.policy)
            await policy_steps.notify(self._policy, NotifyKind.BLOCKED, cmd, why)
            return await self._finish(DisruptionPhase.ABANDONED, why)
        await policy_steps.notify(self._policy, NotifyKind.STARTED, cmd, f"disrupting: {cmd.reason}")
        return None

    async def _launch_and_wait(self, inp: DisruptionInput) -> None:
        cmd, s = inp.command, inp.settings
        if not cmd.replacements:
            self._check_cancel()
            return
        self._set_phase(DisruptionPhase.LAUNCHING)
        info = workflow.info()
        through_outage = workflow.patched(LAUNCH_THROUGH_OUTAGE_PATCH)
        launches = [
            workflow.execute_activity_method(
                ProvisioningActivities.launch_replacement,
                LaunchInput(key=f"{info.workflow_id}/{info.run_id}/{i}", node_pool=cmd.node_pool, replacement=r,
                            reason=cmd.reason),
                start_to_close_timeout=LAUNCH, schedule_to_close_timeout=READ_LIMIT if through_outage else None,
                heartbeat_timeout=LONG_CALL_HEARTBEAT,
                retry_policy=until_limit(LAUNCH_RETRY) if through_outage else LAUNCH_RETRY,
                summary=f"launch {r.instance_types[:3]}")
            for i, r in enumerate(cmd.replacements)
        ]
        results = await asyncio.gather(*launches, return_exceptions=True)
        self._replacements = [r for r in results if isinstance(r, LaunchedReplacement)]
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise _Rollback(RollbackCause.LAUNCH_FAILED, f"launch failed: {_cause(failures[0])}")
        self._check_cancel()
        await self._record([EventSpec(kind="NodeClaim", name=r.node_claim, uid=r.uid, reason=reason,
                                      message=message)
                            for r in self._replacements
                            for reason, message in ((EventReason.DISRUPTION_LAUNCHING, events.launching(cmd.reason)),
                                                    (EventReason.DISRUPTION_WAITING_READINESS,
                                                     events.WAITING_READINESS))], None)
        await self._wait_ready(s)

    async def _wait_ready(self, s: DisruptionSettings) -> None:
        """Poll the replacements until every one is Ready; roll back when one is gone or the deadline passes."""
        # the deadline first: the phase's details name it ("ready by ..."); set after, they lacked it until the
        # first readiness poll came back (a query under load read that). No command either way: replay-safe.
        self._deadline = workflow.now() + timedelta(seconds=s.ready_timeout_seconds)
        self._set_phase(DisruptionPhase.WAITING_READY)
        while True:
            started = workflow.now()
            wait = max(min(s.ready_poll_seconds, (self._deadline - started).total_seconds()), 0.0)
            statuses: list[ReplacementStatus] = await workflow.execute_activity_method(
                ProvisioningActivities.replacement_status,
                StatusInput(replacements=self._replacements, wait_seconds=wait),
                start_to_close_timeout=timedelta(seconds=wait) + SHORT, heartbeat_timeout=LONG_CALL_HEARTBEAT,
                retry_policy=RETRY, summary="wait for replacements to be Ready")
            self._ready = {st.node_claim for st in statuses if st.ready}
            self._refresh_details()
            gone = [st.node_claim for st in statuses if st.gone]
            if gone:
                raise _Rollback(RollbackCause.REPLACEMENT_GONE,
                                f"replacement deleted before it became ready: {', '.join(gone)}")
            self._check_cancel()
            if len(self._ready) == len(self._replacements):
                return
            left = (self._deadline - workflow.now()).total_seconds()
            if left <= 0:
                waiting = sorted({r.node_claim for r in self._replacements} - self._ready)
                raise _Rollback(RollbackCause.NOT_READY,
                                f"replacement not ready within {s.ready_timeout_seconds:g}s: {', '.join(waiting)}")
            # the activity normally waited already; sleep only what it did not (e.g. it answered at once)
            rest = min(wait - (workflow.now() - started).total_seconds(), left)
            if rest > 0:
                await self._wait_for_cancel(rest, "poll replacements")

    async def _wait_for_cancel(self, seconds: float, why: str) -> None:
        """Sleep `seconds` of workflow time, waking early when a cancel arrives."""
        if seconds <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(lambda: self._cancel_reason is not None,
                                          timeout=timedelta(seconds=seconds), timeout_summary=why)

    def _check_cancel(self) -> None:
        if self._cancel_reason is not None:
            raise _Rollback(RollbackCause.CANCELLED, f"cancelled: {self._cancel_reason}")

    async def _drift_outcome(self, failed: bool) -> None:
        """A drift command's replacement failed or became Ready: its pool's drift back-off advances or clears
        (kubernetes-sigs/karpenter#3080). Best effort: a failure to record it never fails the command."""
        cmd = self._input.command
        if cmd.method not in DRIFT_METHODS or not workflow.patched(DRIFT_BACKOFF_PATCH):
            return
        try:
            await workflow.execute_activity_method(
                CandidateActivities.drift_outcome,
                DriftOutcomeInput(node_pool=cmd.node_pool, failed=failed, at=workflow.now()),
                start_to_close_timeout=SHORT, retry_policy=SHORT_RETRY,
                summary="drift back-off" if failed else "clear drift back-off")
        except ActivityError as exc:
            workflow.logger.warning("drift back-off of nodepool %s not recorded: %s", cmd.node_pool, _cause(exc))

    async def _rollback(self, cause: RollbackCause, why: str) -> DisruptionResult:
        cmd = self._input.command
        self._set_phase(DisruptionPhase.ROLLING_BACK)
        if cause in REPLACEMENT_FAILURES:
            await self._drift_outcome(failed=True)
        unready = [r for r in self._replacements if r.node_claim not in self._ready]
        for r in unready:
            await workflow.execute_activity_method(
                ProvisioningActivities.delete_replacement, r, start_to_close_timeout=LAUNCH,
                heartbeat_timeout=LONG_CALL_HEARTBEAT, retry_policy=RETRY)
        cancelled = cause is RollbackCause.CANCELLED and self._cancel_reason is not None
        await workflow.execute_activity_method(
            CandidateActivities.untaint_candidates,
            TaintInput(nodes=cmd.nodes, reason=cmd.reason, hold=self._cancel_hold() if cancelled else None),
            start_to_close_timeout=SHORT, retry_policy=RETRY)
        outcome = DisruptionPhase.CANCELLED if cancelled else DisruptionPhase.ROLLED_BACK
        result = await self._finish(outcome, why)
        result.rollback_cause = cause.value
        return result

    def _cancel_hold(self) -> CancelHold | None:
        """An operator's cancel holds the nodes from re-planning for the cool-down (docs/configuration.md); the
        same activity that untaints writes it, so no new command."""
        seconds = self._input.settings.cancel_hold_seconds
        if seconds <= 0:
            return None
        now = workflow.now()
        return CancelHold(cancelled_at=now, held_until=now + timedelta(seconds=seconds))

    async def _terminate_candidates(self, inp: DisruptionInput) -> DisruptionResult:
        cmd, s = inp.command, inp.settings
        self._set_phase(DisruptionPhase.TERMINATING)
        specs = [EventSpec(kind="Node", name=n.name, uid=n.uid, reason=EventReason.DISRUPTION_TERMINATING,
                           message=events.disrupting("Node", cmd.reason)) for n in cmd.nodes]
        specs += [EventSpec(kind="NodeClaim", name=n.node_claim, reason=EventReason.DISRUPTION_TERMINATING,
                            message=events.disrupting("NodeClaim", cmd.reason)) for n in cmd.nodes if n.node_claim]
        if self._note is not None:
            specs.append(EventSpec(kind="NodePool", name=cmd.node_pool,
                                   reason=EventReason.CONSOLIDATION_WITHOUT_REPLACEMENT,
                                   message=events.without_replacement(cmd.method, [n.name for n in cmd.nodes],
                                                                      cmd.savings_per_hour)))
        await self._record(specs, None)
        ids: list[str] = await workflow.execute_activity_method(
            CandidateActivities.start_terminations,
            TerminationsInput(nodes=cmd.nodes, reason=cmd.reason, task_queue=workflow.info().task_queue,
                              requested_by=workflow.info().workflow_id, drain=self._drain_spec()),
            start_to_close_timeout=SHORT, retry_policy=RETRY)
        try:
            if self._policy is not None and self._policy.escalation is not None:
                await policy_steps.await_terminations(self._policy, cmd, ids, s.termination_poll_seconds)
            else:
                await workflow.execute_activity_method(
                    CandidateActivities.await_terminations,
                    AwaitTerminationsInput(workflow_ids=ids, poll_seconds=s.termination_poll_seconds),
                    start_to_close_timeout=timedelta(seconds=s.termination_timeout_seconds),
                    heartbeat_timeout=timedelta(seconds=30), retry_policy=RETRY)
        except ActivityError as exc:  # past the point of no return: report it, do not pretend to undo
            self._error = _cause(exc)
            return await self._finish(DisruptionPhase.FAILED, f"termination failed: {self._error}", ids)
        return await self._finish(DisruptionPhase.SUCCEEDED, f"{len(cmd.nodes)} node(s) disrupted: {cmd.reason}", ids)

    def _drain_spec(self) -> DrainSpec | None:
        """The pool policy's drain.jobs Wait for the candidates' terminations (docs/semantics.md §15.8); executions
        recorded before DRAIN_PATCH never pass one."""
        drain = self._policy.drain if self._policy is not None else None
        if drain is None or not workflow.patched(policy_steps.DRAIN_PATCH):
            return None
        return drain

    async def _finish(self, outcome: DisruptionPhase, message: str,
                      terminations: list[str] | None = None) -> DisruptionResult:
        cmd = self._input.command
        specs = []
        if outcome in (DisruptionPhase.ROLLED_BACK, DisruptionPhase.INVALID, DisruptionPhase.FAILED,
                       DisruptionPhase.ABANDONED):
            specs = [EventSpec(kind="NodePool", name=cmd.node_pool, reason=EventReason.DISRUPTION_BLOCKED,
                               type="Warning", message=events.disruption_stopped(cmd.method,
                                                                                 [n.name for n in cmd.nodes], message))]
        self._set_phase(outcome)
        await self._record(specs, outcome.value)
        if outcome in (DisruptionPhase.SUCCEEDED, DisruptionPhase.ROLLED_BACK, DisruptionPhase.FAILED):
            kind = NotifyKind.FINISHED if outcome == DisruptionPhase.SUCCEEDED else NotifyKind.FAILED
            await policy_steps.notify(self._policy, kind, cmd, message)
        return DisruptionResult(outcome=outcome, message=message, replacements=self._replacements,
                                terminations=terminations or [])

    async def _record(self, events: list[EventSpec], outcome: str | None) -> None:
        """Events and outcome metrics are best effort: failing to record must not fail the disruption."""
        try:
            await workflow.execute_activity_method(
                EventActivities.record_events,
                EventsInput(events=events, outcome=outcome, reason=self._input.command.reason),
                start_to_close_timeout=SHORT, retry_policy=RetryPolicy(maximum_attempts=3))
        except ActivityError as exc:
            workflow.logger.warning("could not record events: %s", _cause(exc))

    def _set_phase(self, phase: DisruptionPhase) -> None:
        self._phase = phase
        workflow.upsert_search_attributes([sa.PHASE.value_set(phase.value)])
        self._refresh_details()

    def _refresh_details(self) -> None:
        """The workflow page's current details: phase, nodes, why, and what it waits for. Metadata the UI reads
        by query, not a command: recorded histories replay unchanged (tests/test_replay.py)."""
        workflow.set_current_details(summaries.disruption_now(self.progress()))


def _cause(exc: BaseException) -> str:
    while isinstance(exc, ActivityError) and exc.cause is not None:
        exc = exc.cause
    return str(exc)
