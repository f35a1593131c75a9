"""SpotPrespinWorkflow on the time-skipping server with stand-in activities: one launch per sized NodeClaim, none
when the pods fit elsewhere, and the node's own size when sizing fails."""

from __future__ import annotations

import uuid

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.disruption import LaunchedReplacement, LaunchInput, Replacement
from contracts.interruption import PrespinInput, SizedLaunch, SizedReplacements, SizeInput
from workflows.interruption import SpotPrespinWorkflow

OWN = Replacement(instance_types=["m5.2xlarge", "m5a.2xlarge"], capacity_type="spot", price=0.2)


def stand_ins(sizing: SizedReplacements | None, launches: list[LaunchInput]) -> list:
    @activity.defn(name="interruption_size_replacement")
    async def size(inp: SizeInput) -> SizedReplacements:
        if sizing is None:
            raise ApplicationError("cluster cache not fresh", type="ClusterCacheNotReady", non_retryable=True)
        return sizing

    @activity.defn(name="disruption_launch_replacement")
    async def launch(inp: LaunchInput) -> LaunchedReplacement:
        launches.append(inp)
        return LaunchedReplacement(node_claim=f"claim-{inp.key}", uid=str(uuid.uuid4()),
                                   instance_type=inp.replacement.instance_types[0], capacity_type="spot")

    return [size, launch]


async def run(env: WorkflowEnvironment, sizing: SizedReplacements | None) -> tuple[object, list[LaunchInput]]:
    launches: list[LaunchInput] = []
    tq = f"tq-{uuid.uuid4()}"
    inp = PrespinInput(node_name="spot-a", node_uid=f"uid-{uuid.uuid4()}", node_pool="spot", replacement=OWN)
    async with Worker(env.client, task_queue=tq, workflows=[SpotPrespinWorkflow],
                      activities=stand_ins(sizing, launches)):
        handle = await env.client.start_workflow(SpotPrespinWorkflow.run, inp, id=inp.workflow_id, task_queue=tq)
        result = await handle.result()
        phase = await handle.query(SpotPrespinWorkflow.phase)
    return (result, phase), launches


def sized(*types: str) -> SizedReplacements:
    return SizedReplacements(launches=[SizedLaunch(node_pool="spot", pods=1, replacement=Replacement(
        instance_types=[t], capacity_type="spot", price=0.01)) for t in types], pods=len(types))


async def test_one_launch_per_sized_nodeclaim(ts_env: WorkflowEnvironment) -> None:
    (result, phase), launches = await run(ts_env, sized("t3.medium", "c6a.large"))
    launches.sort(key=lambda lt: lt.key)  # launched concurrently: the stand-in records them in either order
    assert phase == "Launched" and [lt.replacement.instance_types for lt in launches] == [["t3.medium"], ["c6a.large"]]
    keys = [lt.key for lt in launches]
    assert keys[0].startswith("prespin-") and keys[1] == f"{keys[0]}-1"  # the first keeps the workflow id
    assert result.launched is not None and len(result.launched_all) == 2 and result.sizing.pods == 2


async def test_pods_that_fit_elsewhere_launch_nothing(ts_env: WorkflowEnvironment) -> None:
    (result, phase), launches = await run(ts_env, SizedReplacements(pods=3, placed=3))
    assert phase == "NotNeeded" and launches == [] and result.launched is None and result.error == ""


async def test_sizing_that_fails_falls_back_to_the_nodes_own_size(ts_env: WorkflowEnvironment) -> None:
    (result, phase), launches = await run(ts_env, None)
    assert phase == "Launched" and [lt.replacement for lt in launches] == [OWN]
    assert result.sizing is not None and not result.sizing.found


async def test_a_node_missing_from_the_cluster_view_keeps_its_own_size(ts_env: WorkflowEnvironment) -> None:
    (_, phase), launches = await run(ts_env, SizedReplacements(found=False))
    assert phase == "Launched" and [lt.replacement for lt in launches] == [OWN]
