"""Interruption workflows: the durable SQS poller and the spot pre-spin (docs/architecture.md §5.4, decisions.md §9).

InterruptionPollerWorkflow runs forever under one fixed id: each iteration is one long, heartbeating
activity that long-polls the queue and dispatches messages; a lost worker only costs a heartbeat timeout
(another worker retries the activity) and un-deleted messages come back after their visibility timeout.
The workflow continues as new after a few iterations so its history stays short.

SpotPrespinWorkflow launches the replacement for a node whose spot instance is being reclaimed. It runs
beside the node's termination (started by the same message), never waits for it, and gives up once the
two-minute warning is over.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.provisioning import ProvisioningActivities
    from activities.queue import InterruptionQueueActivities
    from workflows import search_attributes as sa
    from workflows.disruption_models import LaunchInput
    from workflows.errors import ErrorType
    from workflows.interruption_models import PollCounts, PollerInput, PrespinInput, PrespinResult

POLL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))
LAUNCH_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=500), maximum_interval=timedelta(seconds=5),
                           maximum_attempts=6, non_retryable_error_types=[ErrorType.LAUNCH_FAILED.value])
SPOT_WARNING = timedelta(minutes=2)


@workflow.defn
class InterruptionPollerWorkflow:
    def __init__(self) -> None:
        self._totals = PollCounts()

    @workflow.run
    async def run(self, inp: PollerInput) -> None:
        self._totals = inp.totals
        poll = inp.poll
        for _ in range(max(inp.polls_per_run, 1)):
            counts: PollCounts = await workflow.execute_activity_method(
                InterruptionQueueActivities.poll_interruption_queue, poll,
                start_to_close_timeout=timedelta(seconds=poll.run_seconds + poll.wait_seconds + 60),
                heartbeat_timeout=timedelta(seconds=poll.heartbeat_seconds), retry_policy=POLL_RETRY,
                summary=f"poll interruption queue for {poll.run_seconds:.0f}s",
            )
            self._totals = self._totals.add(counts)
            workflow.set_current_details(
                f"**received** {self._totals.received}, **deleted** {self._totals.deleted}, "
                f"**failed** {self._totals.failed}, **dropped** {self._totals.dropped}\n\n"
                f"by kind: {self._totals.by_kind}\n\nby action: {self._totals.by_action}")
            if workflow.info().is_continue_as_new_suggested():
                break
        workflow.continue_as_new(inp.model_copy(update={"totals": self._totals, "runs": inp.runs + 1}))

    @workflow.query
    def totals(self) -> PollCounts:
        return self._totals


@workflow.defn
class SpotPrespinWorkflow:
    def __init__(self) -> None:
        self._phase = "Launching"

    @workflow.run
    async def run(self, inp: PrespinInput) -> PrespinResult:
        workflow.upsert_search_attributes([
            sa.NODE.value_set(inp.node_name), sa.NODE_POOL.value_set(inp.node_pool),
            sa.REASON.value_set(inp.reason), sa.PHASE.value_set(self._phase),
        ])
        launch = LaunchInput(key=workflow.info().workflow_id, node_pool=inp.node_pool,
                             replacement=inp.replacement, reason=inp.reason)
        try:
            launched = await workflow.execute_activity_method(
                ProvisioningActivities.launch_replacement, launch,
                start_to_close_timeout=timedelta(seconds=60), schedule_to_close_timeout=SPOT_WARNING,
                retry_policy=LAUNCH_RETRY, summary=f"pre-spin {inp.replacement.instance_types[:3]}",
            )
        except ActivityError as exc:
            self._set_phase("Failed")
            cause = exc.cause if exc.cause is not None else exc
            return PrespinResult(error=str(cause))
        self._set_phase("Launched")
        return PrespinResult(launched=launched)

    def _set_phase(self, phase: str) -> None:
        self._phase = phase
        workflow.upsert_search_attributes([sa.PHASE.value_set(phase)])

    @workflow.query
    def phase(self) -> str:
        return self._phase
