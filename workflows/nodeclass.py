"""NodeClassWorkflow: resolve every EC2NodeClass once (the `nodeflow-nodeclass` Schedule runs it every 60 s).

One activity does the work (activities/nodeclass.py); the workflow adds durability and retries, and its
result lists each class's readiness, so `temporal schedule describe` shows what did not resolve.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.nodeclass import NodeClassActivities
    from contracts.nodeclass import NodeClassInput, NodeClassResult
    from workflows.retries import LONG_CALL_HEARTBEAT

# Retried until RESOLVE_LIMIT (within the schedule's 10-minute execution timeout), not 4 times (~7 s): an API server
# outage then holds the SKIP schedule for its length instead of failing the resolution.
RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=15))
RESOLVE_LIMIT = timedelta(minutes=4)


@workflow.defn(name="NodeClassWorkflow")
class NodeClassWorkflow:
    @workflow.run
    async def run(self, inp: NodeClassInput) -> NodeClassResult:
        return await workflow.execute_activity_method(
            NodeClassActivities.reconcile, inp, start_to_close_timeout=timedelta(minutes=2),
            schedule_to_close_timeout=RESOLVE_LIMIT, heartbeat_timeout=LONG_CALL_HEARTBEAT, retry_policy=RETRY,
            summary="resolve EC2NodeClasses")
