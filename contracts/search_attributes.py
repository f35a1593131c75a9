"""Search attributes (Keyword) that make nodeflow's workflows findable in the Temporal UI (docs/contracts.md §5)."""

from temporalio.common import SearchAttributeKey

NODE = SearchAttributeKey.for_keyword("NodeflowNode")
NODE_POOL = SearchAttributeKey.for_keyword("NodeflowNodePool")
REASON = SearchAttributeKey.for_keyword("NodeflowReason")
PHASE = SearchAttributeKey.for_keyword("NodeflowPhase")

ALL = (NODE, NODE_POOL, REASON, PHASE)
TASK_QUEUE = "nodeflow"


def queue_scoped(base: str, task_queue: str) -> str:
    """`base` on the production queue; `base-<queue>` on any other. A fleet runs one worker per cluster on its own
    queue in one Temporal namespace (docs/fleet.md), so every singleton id (the Schedules, the interruption
    poller, a pool's drift rollout) needs the queue in it; a single cluster on `nodeflow` keeps today's ids."""
    return base if task_queue == TASK_QUEUE else f"{base}-{task_queue}"
