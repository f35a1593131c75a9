"""deploy/register-search-attributes.sh registers every search attribute the workflows use, idempotently."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.testing import WorkflowEnvironment

from contracts.search_attributes import ALL
from devstack.binaries import find_binary

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "register-search-attributes.sh"


async def test_script_registers_all_attributes_and_can_run_again() -> None:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=find_binary("temporal"))
    try:
        address = env.client.service_client.config.target_host
        run_env = {**os.environ, "TEMPORAL": find_binary("temporal"), "NODEFLOW_TEMPORAL_ADDRESS": address,
                   "NODEFLOW_TEMPORAL_NAMESPACE": env.client.namespace}
        for _ in range(2):
            proc = await asyncio.to_thread(subprocess.run, ["sh", str(SCRIPT)], env=run_env, capture_output=True,
                                           text=True, timeout=60)
            assert proc.returncode == 0, proc.stderr
        resp = await env.client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=env.client.namespace))
        for key in ALL:
            assert resp.custom_attributes.get(key.name) == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, key.name
    finally:
        await env.shutdown()
