"""A termination's history still replays when a workflow task ended right after a local activity.

The split happens under load or when a query arrives as a local activity finishes (docs/decisions.md §18);
`support.history_split` makes it from a recorded history. Executions that decide their patches first replay
whichever task the split lands in; the older history shows the failure the split used to cause.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.history_split import local_activity_markers, split_after_local_activity
from support.replay import replay_failure
from temporalio.client import WorkflowHistory

HISTORIES = Path(__file__).parent / "histories"
PATCHES_FIRST = json.loads((HISTORIES / "TerminationWorkflow__patches_decided_first.json").read_text("utf-8"))
LAZY_PATCHES = json.loads((HISTORIES / "TerminationWorkflow__nodeclaim_markers.json").read_text("utf-8"))


async def _replay_failure(history: dict[str, Any]) -> str | None:
    return await replay_failure(WorkflowHistory.from_json("split", json.dumps(history)))


@pytest.mark.parametrize("nth", range(local_activity_markers(PATCHES_FIRST)))
async def test_a_split_after_any_local_activity_replays(nth: int) -> None:
    split = split_after_local_activity(PATCHES_FIRST, nth)
    assert len(split["events"]) == len(PATCHES_FIRST["events"]) + 3
    assert await _replay_failure(split) is None


async def test_the_split_broke_replay_when_patches_were_decided_lazily() -> None:
    """The case that must fail: without it, the test above could pass on a split that changes nothing."""
    assert await _replay_failure(LAZY_PATCHES) is None
    failure = await _replay_failure(split_after_local_activity(LAZY_PATCHES, 0))
    assert failure is not None and "TMPRL1100" in failure and "nodeclaim-termination-markers" in failure
