"""Replay every recorded workflow history (tests/histories/*.json) against the current workflow code.

A change that alters the commands a workflow issues (activities, timers, search-attribute upserts) for an
execution that may still be running fails here instead of in production. Re-record with RECORD_HISTORIES=1
only for intentional new behaviour, and keep old files while old executions can still be running.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from runtime.wiring import workflows

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(f"replay-{path.stem}", path.read_text(encoding="utf-8"))
    replayer = Replayer(workflows=workflows(), data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


def test_termination_histories_are_recorded() -> None:
    names = {p.stem.split("__")[0] for p in HISTORIES}
    assert "TerminationWorkflow" in names, "record them: RECORD_HISTORIES=1 pytest tests/e2e/test_termination_*.py"
