"""A worker waits for a Temporal server that restarts rather than exiting (client.connection.connect_patiently): the
chaos suite's replicas exited rc=1 when they started while the server they had just lost was coming back."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from client.connection import InsecureTemporalAddress, connect_patiently
from devstack.processes import TemporalDevServer, free_port


async def test_a_server_that_comes_up_later_is_waited_for(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    server = TemporalDevServer(port=port, db_path=tmp_path / "t.db", headless=True, log_path=tmp_path / "t.log")
    caplog.set_level(logging.WARNING, logger="client.connection")

    async def start_later() -> None:
        await asyncio.sleep(2.0)
        await asyncio.to_thread(server.start)

    later = asyncio.create_task(start_later())
    try:
        client = await connect_patiently(60.0, address=f"127.0.0.1:{port}", namespace="default")
        assert await client.service_client.check_health()
    finally:
        await later
        server.stop()
    retried = [r for r in caplog.records if "Temporal not reachable" in r.getMessage()]
    assert len(retried) >= 2  # refused while the server was down, then connected


async def test_an_unreachable_server_fails_after_the_limit() -> None:
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"Connection refused|connect"):
        await connect_patiently(1.5, address=f"127.0.0.1:{free_port()}", namespace="default")
    assert 1.0 <= time.monotonic() - started < 12.0


async def test_what_retrying_cannot_fix_is_raised_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(InsecureTemporalAddress):
        await connect_patiently(60.0, address="temporal.example.com:7233", namespace="default", require_secure=True)
    assert time.monotonic() - started < 1.0
