"""Replay every recorded workflow history (tests/histories/*.json) against the current workflow code.

A change that alters the commands a workflow issues (activities, timers, search-attribute upserts) for an
execution that may still be running fails here instead of in production. Re-record with RECORD_HISTORIES=1
only for intentional new behaviour, and keep old files while old executions can still be running.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.replay import replay_failure
from temporalio.client import WorkflowHistory

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(f"replay-{path.stem}", path.read_text(encoding="utf-8"))
    failure = await replay_failure(history)
    assert failure is None, f"{path.name}: {failure}"


def test_termination_histories_are_recorded() -> None:
    names = {p.stem.split("__")[0] for p in HISTORIES}
    assert "TerminationWorkflow" in names, "record them: RECORD_HISTORIES=1 pytest tests/e2e/test_termination_*.py"
