"""One provisioning batch by hand for e2e tests on the disruption stack (support/disruption_stack.py): find the
pods the simulator's scheduler left Unschedulable, then run a ProvisioningWorkflow for them on the stack's worker,
so a test controls when each batch starts instead of waiting for the pending-pod intake."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from contracts.provisioning import PodRef, ProvisioningInput, ProvisioningResult, ProvisioningSettings
from workflows.provisioning import ProvisioningWorkflow


def pending(stack: Any, app: str) -> list[PodRef]:
    """Pods labelled app=`app` in `default` that carry an Unschedulable condition."""
    from kubernetes import client as k8s

    items = stack.api.sanitize_for_serialization(
        k8s.CoreV1Api(stack.api).list_namespaced_pod("default", label_selector=f"app={app}").items)
    return [PodRef(key=f"default/{p['metadata']['name']}", uid=p["metadata"]["uid"]) for p in items
            if any(c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get("conditions") or [])]


async def provision(stack: Any, refs: list[PodRef], settings: ProvisioningSettings,
                    timeout: float = 90) -> ProvisioningResult:
    """Run one ProvisioningWorkflow for `refs` under `settings` and return its result."""
    handle = await stack.client.start_workflow(ProvisioningWorkflow.run,
                                               ProvisioningInput(pods=refs, settings=settings),
                                               id=f"provision-test-{uuid.uuid4()}", task_queue=stack.task_queue)
    return await asyncio.wait_for(handle.result(), timeout)
