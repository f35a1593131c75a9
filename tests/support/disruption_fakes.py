"""Test-only activity implementations registered under the real activity names (no servers behind them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime

from temporalio import activity
from temporalio.exceptions import ApplicationError

from contracts.disruption import (
    AwaitTerminationsInput,
    DisruptionCommand,
    DriftOutcomeInput,
    EventsInput,
    EventSpec,
    LaunchedReplacement,
    LaunchInput,
    NodeRef,
    PlanPassInput,
    PlanPassResult,
    Replacement,
    ReplacementStatus,
    StatusInput,
    TaintInput,
    TerminationsInput,
    ValidateInput,
    ValidationResult,
)


def command(n: int = 1, replacements: int = 1, reason: str = "Underutilized", method: str = "SingleNodeConsolidation",
            pool: str = "default") -> DisruptionCommand:
    return DisruptionCommand(
        method=method, reason=reason, node_pool=pool,
        nodes=[NodeRef(name=f"node-{i}", uid=f"uid-{i}", node_claim=f"claim-{i}") for i in range(n)],
        replacements=[Replacement(instance_types=["m5.large"], capacity_type="on-demand", price=0.096)
                      for _ in range(replacements)])


@dataclass
class Fakes:
    """Records every call in order; knobs decide what the fake cluster answers."""

    valid: bool = True
    as_delete: dict[str, list[str]] | None = None  # valid, handed back as a delete placing the pods so
    ready_after_polls: int | None = 1  # None: never ready
    launch_error: str | None = None
    launch_transient_failures: int = 0  # the first N launch attempts fail as an API outage does (retryable)
    launch_lost: int = 0  # the first N launch attempts die with their worker: no heartbeat, no answer, ever
    launch_attempts: list[tuple[int, datetime]] = field(default_factory=list)  # (attempt, when it was scheduled)
    taint_error: str | None = None
    termination_error: str | None = None
    block_terminations: asyncio.Event | None = None
    status_polling: asyncio.Event | None = None  # set while a readiness poll runs, which then waits to be cancelled
    calls: list[str] = field(default_factory=list)
    plans: list[PlanPassResult] = field(default_factory=list)  # answered in turn, then `plan` for every pass
    plan_inputs: list[PlanPassInput] = field(default_factory=list)
    validate_scheduled: list[datetime] = field(default_factory=list)
    polls: int = 0
    deleted: list[str] = field(default_factory=list)
    termination_reasons: list[str] = field(default_factory=list)
    termination_deadlines: list[datetime | None] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    recorded: list[EventSpec] = field(default_factory=list)  # every Event the workflow asked to record
    drift_outcomes: list[DriftOutcomeInput] = field(default_factory=list)  # kept apart from `calls`
    plan: PlanPassResult = field(default_factory=PlanPassResult)

    def activities(self) -> list:
        """Every activity a disruption or planner workflow calls, answered from this record's knobs."""
        return self._deciding() + self._acting()

    def _deciding(self) -> list:
        """Planning, validation and tainting: what happens before anything launches."""
        f = self

        @activity.defn(name="disruption_validate")
        async def validate(inp: ValidateInput) -> ValidationResult:
            f.calls.append("validate")
            f.validate_scheduled.append(activity.info().scheduled_time)
            if f.as_delete is not None:
                instead = inp.command.model_copy(update={"replacements": [], "placements": f.as_delete})
                return ValidationResult(valid=True, reason="their pods fit on the other nodes now", command=instead)
            return ValidationResult(valid=f.valid, reason="" if f.valid else "candidates changed")

        @activity.defn(name="disruption_taint_candidates")
        async def taint(inp: TaintInput) -> list[str]:
            f.calls.append("taint")
            if f.taint_error:
                raise ApplicationError(f.taint_error, type="CandidateGone", non_retryable=True)
            return [n.name for n in inp.nodes]

        @activity.defn(name="disruption_untaint_candidates")
        async def untaint(inp: TaintInput) -> list[str]:
            f.calls.append("untaint")
            return [n.name for n in inp.nodes]

        @activity.defn(name="planner_pass")
        async def plan_pass(inp: PlanPassInput) -> PlanPassResult:
            f.calls.append("plan")
            f.plan_inputs.append(inp)
            return f.plans.pop(0) if f.plans else f.plan

        return [validate, taint, untaint, plan_pass]

    def _acting(self) -> list:
        """Launching, waiting, terminating and recording: what a disruption does once it is valid."""
        f = self

        @activity.defn(name="disruption_launch_replacement")
        async def launch(inp: LaunchInput) -> LaunchedReplacement:
            f.calls.append("launch")
            info = activity.info()
            f.launch_attempts.append((info.attempt, info.current_attempt_scheduled_time))
            if f.launch_lost > 0:
                f.launch_lost -= 1
                await asyncio.Event().wait()  # the worker's process is gone: only a timeout ends this attempt
            if f.launch_transient_failures > 0:
                f.launch_transient_failures -= 1
                raise ApplicationError("ServiceException: (503)", type="ApiException")
            if f.launch_error:
                raise ApplicationError(f.launch_error, type="LaunchFailed", non_retryable=True)
            return LaunchedReplacement(node_claim=f"repl-{inp.key}", uid=f"u-{inp.key}", instance_id="i-1",
                                       instance_type=inp.replacement.instance_types[0])

        @activity.defn(name="disruption_replacement_status")
        async def status(inp: StatusInput) -> list[ReplacementStatus]:
            f.polls += 1  # answers at once: the workflow sleeps the rest of the poll interval on a timer
            if f.status_polling is not None:  # or waits for its cancellation, heartbeating as the real one does
                f.status_polling.set()
                while True:
                    activity.heartbeat()
                    await asyncio.sleep(0.1)
            ready = f.ready_after_polls is not None and f.polls >= f.ready_after_polls
            return [ReplacementStatus(node_claim=r.node_claim, ready=ready) for r in inp.replacements]

        @activity.defn(name="disruption_delete_replacement")
        async def delete(r: LaunchedReplacement) -> str:
            f.calls.append("delete_replacement")
            f.deleted.append(r.node_claim)
            return r.node_claim

        @activity.defn(name="disruption_start_terminations")
        async def start_terms(inp: TerminationsInput) -> list[str]:
            f.calls.append("terminate")
            f.termination_reasons += [inp.reason] * len(inp.nodes)
            f.termination_deadlines += [inp.deadline] * len(inp.nodes)
            return [f"terminate-{n.uid}" for n in inp.nodes]

        @activity.defn(name="disruption_await_terminations")
        async def await_terms(inp: AwaitTerminationsInput) -> list[str]:
            if f.block_terminations is not None:
                await f.block_terminations.wait()
            if f.termination_error:
                raise ApplicationError(f.termination_error, type="TerminationFailed", non_retryable=True)
            return inp.workflow_ids

        @activity.defn(name="disruption_record_events")
        async def events(inp: EventsInput) -> int:
            if inp.outcome:
                f.outcomes.append(inp.outcome)
            f.recorded += inp.events
            return len(inp.events)

        @activity.defn(name="disruption_drift_outcome")
        async def drift_outcome(inp: DriftOutcomeInput) -> str:
            f.drift_outcomes.append(inp)
            return ""

        return [launch, status, delete, start_terms, await_terms, events, drift_outcome]
