"""Search attributes (Keyword) that make nodeflow's workflows findable in the Temporal UI (docs/contracts.md §5)."""

from temporalio.common import SearchAttributeKey

NODE = SearchAttributeKey.for_keyword("NodeflowNode")
NODE_POOL = SearchAttributeKey.for_keyword("NodeflowNodePool")
REASON = SearchAttributeKey.for_keyword("NodeflowReason")
PHASE = SearchAttributeKey.for_keyword("NodeflowPhase")

ALL = (NODE, NODE_POOL, REASON, PHASE)
TASK_QUEUE = "nodeflow"
