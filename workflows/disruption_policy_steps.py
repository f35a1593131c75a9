"""The DisruptionPolicy steps of a DisruptionWorkflow (docs/semantics.md §15): the pre-disruption hook and its
ack, post-event notifications, and escalation of a drain that stays blocked. Workflow code: replay-safe, no I/O.

The workflow calls these only for executions that carry a policy and passed its patch, so histories recorded
before policies replay unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from activities.events import EventActivities
    from activities.policy_hooks import PolicyHookActivities
    from api import events
    from api.events import EventReason
    from contracts.disruption import DisruptionCommand, EventsInput, EventSpec
    from contracts.policy import HookCall, Notification, NotifyKind, TerminationBlocker, WatchInput
    from contracts.policy_controls import EscalationSpec, HookSpec, PolicyControls
    from contracts.termination import ForceRequest

POLICY_PATCH = "disruption-policy-controls"  # executions before it never call hooks or escalate
DRAIN_PATCH = "disruption-policy-drain-wait"  # executions before it never pass drain.jobs Wait to terminations
HOOK_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                         maximum_interval=timedelta(seconds=60))
NOTIFY_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3)
UNACKED_HOOK = timedelta(minutes=2)  # a hook without ack: tried (with backoff) this long, then the disruption goes on
WATCH_CHUNK = 600.0  # longest single watch of the terminations, so the workflow reconsiders now and then
SHORT = timedelta(seconds=30)


async def pre_disruption(hook: HookSpec, cmd: DisruptionCommand, approved: Callable[[], bool]) -> bool:
    """Call the hook for each candidate; True to go on. Without a required ack the answer only informs (tried for
    a while, then the disruption goes on); with it, a 2xx from every call or an approval within the ack timeout."""
    timeout = timedelta(seconds=hook.ack_timeout_seconds) if hook.ack_required else UNACKED_HOOK
    deadline = workflow.now() + timeout
    wid = workflow.info().workflow_id
    calls = [workflow.start_activity_method(
        PolicyHookActivities.pre_disruption_hook,
        HookCall(url=hook.url, node=n.name, pool=cmd.node_pool, reason=cmd.reason,
                 deadline=deadline if hook.ack_required else None, workflow_id=wid),
        start_to_close_timeout=SHORT, schedule_to_close_timeout=timeout, retry_policy=HOOK_RETRY,
        cancellation_type=ActivityCancellationType.TRY_CANCEL, summary=f"pre-disruption hook for {n.name}")
        for n in cmd.nodes]
    with contextlib.suppress(TimeoutError):
        await workflow.wait_condition(lambda: all(c.done() for c in calls) or approved(), timeout=timeout,
                                      timeout_summary="pre-disruption ack")
    for c in calls:
        if not c.done():
            c.cancel()
    acked = all(c.done() and not c.cancelled() and c.exception() is None for c in calls)
    with contextlib.suppress(ActivityError, asyncio.CancelledError):
        await asyncio.gather(*calls, return_exceptions=True)
    if not hook.ack_required or acked or approved():
        return True
    return not hook.abandon_on_timeout


async def notify(policy: PolicyControls | None, kind: NotifyKind, cmd: DisruptionCommand, message: str) -> None:
    """A post-event notification; best effort (a few attempts), never fails the disruption."""
    if policy is None or not policy.notify_url:
        return
    try:
        await workflow.execute_activity_method(
            PolicyHookActivities.notify,
            Notification(url=policy.notify_url, kind=kind, nodes=[n.name for n in cmd.nodes], pool=cmd.node_pool,
                         reason=cmd.reason, message=message, workflow_id=workflow.info().workflow_id,
                         policy=policy.policy),
            start_to_close_timeout=SHORT, retry_policy=NOTIFY_RETRY, summary=f"notify {kind.value}")
    except ActivityError as exc:
        workflow.logger.warning("notification %s not delivered: %s", kind.value, exc.cause or exc)


async def await_terminations(policy: PolicyControls, cmd: DisruptionCommand, ids: list[str],
                             poll_seconds: float) -> list[str]:
    """Wait for the candidates' terminations; past notifyAfter say (Event + notification) what blocks them,
    past forceAfter force them (the termination's own force path), recorded with the reason."""
    esc = policy.escalation or EscalationSpec()
    start = workflow.now()
    steps = _steps(start, esc)
    while True:
        now = workflow.now()
        due = [t for t, _ in steps if t > now]
        wait = min([(t - now).total_seconds() for t in due] + [WATCH_CHUNK])
        blockers: list[TerminationBlocker] = await workflow.execute_activity_method(
            PolicyHookActivities.watch_terminations,
            WatchInput(workflow_ids=ids, return_after_seconds=wait, poll_seconds=poll_seconds),
            start_to_close_timeout=timedelta(seconds=wait) + SHORT, heartbeat_timeout=SHORT,
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                                     non_retryable_error_types=["TerminationFailed"]),
            summary="wait for the candidates' terminations")
        if not blockers:
            return ids
        rest = min([(t - workflow.now()).total_seconds() for t in due] + [wait])
        if rest > 0:  # the watch answered early (e.g. a time-skipping test): sleep what it did not
            await workflow.sleep(timedelta(seconds=rest), summary="escalation step")
        for at, kind in [s for s in steps if s[0] <= workflow.now()]:
            steps.remove((at, kind))
            await _escalate(policy, cmd, kind, at - start, blockers)


def _steps(start: datetime, esc: EscalationSpec) -> list[tuple[datetime, NotifyKind]]:
    out = []
    if esc.notify_after_seconds is not None:
        out.append((start + timedelta(seconds=esc.notify_after_seconds), NotifyKind.BLOCKED))
    if esc.force_after_seconds is not None:
        out.append((start + timedelta(seconds=esc.force_after_seconds), NotifyKind.FORCED))
    return out


async def _escalate(policy: PolicyControls, cmd: DisruptionCommand, kind: NotifyKind, after: timedelta,
                    blockers: list[TerminationBlocker]) -> None:
    what = "; ".join(b.describe() for b in blockers)
    if kind is NotifyKind.FORCED:
        reason = f"escalation: drain blocked for {int(after.total_seconds())}s (DisruptionPolicy {policy.policy})"
        for b in blockers:
            await workflow.get_external_workflow_handle(b.workflow_id).signal("force_signal", ForceRequest(
                reason=reason))
        message, event = events.disruption_forced(after, policy.policy), EventReason.DISRUPTION_FORCED
    else:
        message, event = events.disruption_escalated(after, what), EventReason.DISRUPTION_ESCALATED
    names = {n.name: n.uid for n in cmd.nodes}
    specs = [EventSpec(kind="Node", name=b.node, uid=names.get(b.node), reason=event, type="Warning",
                       message=message) for b in blockers if b.node]
    specs.append(EventSpec(kind="NodePool", name=cmd.node_pool, reason=event, type="Warning", message=message))
    with contextlib.suppress(ActivityError):
        await workflow.execute_activity_method(EventActivities.record_events,
                                               EventsInput(events=specs, reason=cmd.reason),
                                               start_to_close_timeout=SHORT, retry_policy=NOTIFY_RETRY)
    await notify(policy, kind, cmd, f"{message} ({what})" if kind is NotifyKind.FORCED else message)
