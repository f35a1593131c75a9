"""Interruption workflows: the durable SQS poller and the spot pre-spin (docs/architecture.md §5.4, decisions.md §9).

InterruptionPollerWorkflow runs forever under one fixed id: each iteration is one long, heartbeating
activity that long-polls the queue and dispatches messages; a lost worker only costs a heartbeat timeout
(another worker retries the activity) and un-deleted messages come back after their visibility timeout.
The workflow continues as new after a few iterations so its history stays short.

SpotPrespinWorkflow launches the replacement for a node whose spot instance is being reclaimed. It runs
beside the node's termination (started by the same message), never waits for it, and gives up once the
two-minute warning is over. It sizes the replacement by scheduling the node's pods
(planning/provisioning/spot_sizing.py): nothing when they fit on other nodes, else the NodeClaims the provisioner would
launch; if sizing cannot run in time, it launches the node's own size as before (docs/semantics.md §11).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.provisioning import ProvisioningActivities
    from activities.queue import InterruptionQueueActivities
    from activities.spot_sizing import SpotSizingActivities
    from contracts import search_attributes as sa
    from contracts.disruption import LaunchedReplacement, LaunchInput, Replacement
    from contracts.errors import ErrorType
    from contracts.interruption import (
        PollCounts,
        PollerInput,
        PrespinInput,
        PrespinResult,
        SizedLaunch,
        SizedReplacements,
        SizeInput,
    )
    from workflows.retries import LONG_CALL_HEARTBEAT

POLL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))
LAUNCH_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=500), maximum_interval=timedelta(seconds=5),
                           maximum_attempts=6, non_retryable_error_types=[ErrorType.LAUNCH_FAILED.value])
SPOT_WARNING = timedelta(minutes=2)
SIZING_PATCH = "spot-prespin-sized-by-pods"  # executions before it launched the interrupted node's own size
SIZING_LIMIT = timedelta(seconds=20)  # then launch the node's own size: the warning gives two minutes in all
SIZING_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=500), maximum_interval=timedelta(seconds=2))


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
        if not workflow.patched(SIZING_PATCH):
            return await self._launch_all(inp, [SizedLaunch(node_pool=inp.node_pool, replacement=inp.replacement)])
        sizing = await self._size(inp)
        if not sizing.launches:
            self._set_phase("NotNeeded")  # the pods fit on other nodes (or there are none)
            return PrespinResult(sizing=sizing)
        return await self._launch_all(inp, sizing.launches, sizing)

    async def _size(self, inp: PrespinInput) -> SizedReplacements:
        """The NodeClaims the provisioner would launch for the node's pods; the node's own size when sizing fails
        in time or the node is not in the cluster view."""
        own = SizedReplacements(found=False, launches=[SizedLaunch(node_pool=inp.node_pool,
                                                                   replacement=inp.replacement)])
        try:
            sizing: SizedReplacements = await workflow.execute_activity_method(
                SpotSizingActivities.size_replacement, SizeInput(node_name=inp.node_name),
                start_to_close_timeout=SIZING_LIMIT, schedule_to_close_timeout=SIZING_LIMIT,
                retry_policy=SIZING_RETRY, summary=f"size the replacement from {inp.node_name}'s pods")
        except ActivityError as exc:
            workflow.logger.warning("sizing from the pods failed (%s); pre-spinning the node's own size", exc.cause)
            return own
        return sizing if sizing.found else own

    async def _launch_all(self, inp: PrespinInput, launches: list[SizedLaunch],
                          sizing: SizedReplacements | None = None) -> PrespinResult:
        """Launch every NodeClaim at once (the first keyed by the workflow id, as before sizing)."""
        wid = workflow.info().workflow_id
        results = await asyncio.gather(*(self._launch(inp, f"{wid}-{i}" if i else wid, launch.node_pool,
                                                      launch.replacement)
                                         for i, launch in enumerate(launches)), return_exceptions=True)
        launched = [r for r in results if isinstance(r, LaunchedReplacement)]
        errors = [r for r in results if isinstance(r, BaseException)]
        for err in errors:
            if not isinstance(err, ActivityError):
                raise err
        error = "; ".join(str(e.cause if e.cause is not None else e) for e in errors)
        self._set_phase("Failed" if errors else "Launched")
        return PrespinResult(launched=launched[0] if launched else None, error=error, launched_all=launched,
                             sizing=sizing)

    async def _launch(self, inp: PrespinInput, key: str, node_pool: str, rep: Replacement) -> LaunchedReplacement:
        return await workflow.execute_activity_method(
            ProvisioningActivities.launch_replacement,
            LaunchInput(key=key, node_pool=node_pool, replacement=rep, reason=inp.reason),
            start_to_close_timeout=timedelta(seconds=60), schedule_to_close_timeout=SPOT_WARNING,
            heartbeat_timeout=LONG_CALL_HEARTBEAT, retry_policy=LAUNCH_RETRY,
            summary=f"pre-spin {rep.instance_types[:3]}",
        )

    def _set_phase(self, phase: str) -> None:
        self._phase = phase
        workflow.upsert_search_attributes([sa.PHASE.value_set(phase)])

    @workflow.query
    def phase(self) -> str:
        return self._phase
