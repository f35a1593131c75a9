"""activities/heartbeat.py: work that does not heartbeat itself heartbeats while it runs, so a heartbeat timeout
tells a dead worker from a slow call."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import ActivityEnvironment

from activities.heartbeat import heartbeating


async def _slow(value: str, seconds: float) -> str:
    await asyncio.sleep(seconds)
    return value


async def test_heartbeats_while_the_work_runs_and_returns_its_result() -> None:
    env, beats = ActivityEnvironment(), []
    env.on_heartbeat = lambda *details: beats.append(details)
    assert await env.run(heartbeating, _slow("done", 0.35), 0.05) == "done"
    assert 4 <= len(beats) <= 7, beats


async def test_quick_work_sends_no_heartbeat() -> None:
    env, beats = ActivityEnvironment(), []
    env.on_heartbeat = lambda *details: beats.append(details)
    assert await env.run(heartbeating, _slow("done", 0.0), 0.05) == "done"
    assert beats == []


async def test_an_error_of_the_work_is_raised() -> None:
    async def boom() -> None:
        await asyncio.sleep(0.06)
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        await ActivityEnvironment().run(heartbeating, boom(), 0.05)


async def test_outside_an_activity_it_only_runs_the_work() -> None:
    assert await heartbeating(_slow("done", 0.12), 0.05) == "done"
