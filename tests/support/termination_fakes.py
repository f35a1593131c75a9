"""Stand-ins for the TerminationWorkflow's activities after the drain, for workflow tests on the time-skipping
server that are about the drain: each step succeeds at once (pods deleted, volumes detached, instance terminated,
finalizers removed, the NodeClaim marked)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from contracts.termination import (
    DeletePodsInput,
    DeletePodsResult,
    FinalizeInput,
    FinalizeResult,
    InstanceInput,
    InstanceResult,
    TerminationMarkersInput,
    VolumesInput,
    VolumesResult,
)


@activity.defn(name="termination.delete_pods")
async def delete_pods(inp: DeletePodsInput) -> DeletePodsResult:
    return DeletePodsResult()


@activity.defn(name="termination.wait_volumes")
async def wait_volumes(inp: VolumesInput) -> VolumesResult:
    return VolumesResult(detached=True)


@activity.defn(name="termination.terminate_instance")
async def terminate_instance(inp: InstanceInput) -> InstanceResult:
    return InstanceResult(instance_id="i-0abc", state="terminated", terminate_called=True)


@activity.defn(name="termination.finalize")
async def finalize(inp: FinalizeInput) -> FinalizeResult:
    return FinalizeResult(node_finalizer_removed=True, node_claim_finalizer_removed=True)


@activity.defn(name="termination.mark_nodeclaim")
async def mark_nodeclaim(inp: TerminationMarkersInput) -> bool:
    return True


def after_drain(delete: Callable[..., Any] | None = None) -> list[Callable[..., Any]]:
    """The five stand-ins; `delete` replaces termination.delete_pods for a test that watches the force-delete."""
    return [delete or delete_pods, wait_volumes, terminate_instance, finalize, mark_nodeclaim]
