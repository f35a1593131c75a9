"""The demo's new-AMI moment: a newer image for the `memory` EC2NodeClass is registered in moto, the
`nodeflow-nodeclass` Schedule is triggered, its NodeClassWorkflow resolves the image (and marks the memory pool's
NodeClaims Drifted/AMIDrift), and the planner rolls the pool's nodes onto it by drift within its budget (1).

`AmiRollout.observe` follows it for the live view and the report: seconds from the image's registration to its
resolution, to the first Drift disruption of the pool, and to the last node on the new image.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from api import labels as L
from api.timestamps import format_seconds

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).

NEW_IMAGE_AFTER = 40.0  # seconds into the demo (after the spot interruption at 30 s)
NODE_CLASS = "memory"
NODE_POOL = "memory"


@dataclass
class AmiRollout:
    image: str
    started: float = field(default_factory=time.monotonic)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    resolved_after: float | None = None
    first_drift_after: float | None = None
    done_after: float | None = None
    on_image: int = 0
    in_pool: int = 0

    def note(self) -> str:
        """One line for the live view."""
        steps = [f"resolved +{self.resolved_after:.0f}s" if self.resolved_after is not None else "resolving",
                 f"first drift +{self.first_drift_after:.0f}s" if self.first_drift_after is not None else None,
                 f"done +{self.done_after:.0f}s" if self.done_after is not None else None]
        done = ", ".join(s for s in steps if s)
        return (f"new AMI {self.image} for EC2NodeClass {NODE_CLASS}: {done}; "
                f"{self.on_image}/{self.in_pool} {NODE_POOL} nodes on it")

    def report(self) -> dict[str, Any]:
        return {"image": self.image, "nodeClass": NODE_CLASS, "nodePool": NODE_POOL,
                "resolvedAfterSeconds": _round(self.resolved_after),
                "firstDriftAfterSeconds": _round(self.first_drift_after),
                "rolledOutAfterSeconds": _round(self.done_after), "nodesOnNewImage": self.on_image,
                "nodesInPool": self.in_pool}

    async def observe(self, stack: Any) -> list[str]:
        """Update the milestones; returns the ones reached now (the headless demo prints them)."""
        now = time.monotonic() - self.started
        reached = []
        if self.resolved_after is None and await asyncio.to_thread(_resolved, stack, self.image):
            self.resolved_after = now
            reached.append(f"EC2NodeClass {NODE_CLASS} resolved the new AMI {self.image} after {now:.1f}s")
        if self.first_drift_after is None and await _drift_started(stack.client, self.started_at):
            self.first_drift_after = now
            reached.append(f"first Drift disruption of NodePool {NODE_POOL} {now:.1f}s after the new AMI")
        self.on_image, self.in_pool = await asyncio.to_thread(_pool_images, stack, self.image)
        if self.done_after is None and self.in_pool and self.on_image == self.in_pool:
            self.done_after = now
            reached.append(f"all {self.in_pool} {NODE_POOL} nodes run {self.image} after {now:.1f}s")
        return reached


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


async def register_new_image(stack: Any) -> AmiRollout:
    """Publish a newer image for the memory class in moto and trigger the resolution Schedule."""
    from client.nodeclass_schedule import NODECLASS_SCHEDULE_ID

    name = f"nodeflow-demo-{NODE_CLASS}-{datetime.now(UTC):%Y%m%d%H%M%S}"
    image = await asyncio.to_thread(stack.aws.register_newer_image, NODE_CLASS, name)
    rollout = AmiRollout(image=image)
    await stack.client.get_schedule_handle(NODECLASS_SCHEDULE_ID).trigger()
    return rollout


def _custom(stack: Any) -> Any:
    from kubernetes import client as k8s

    return k8s.CustomObjectsApi(stack.sim.api_client())


def _resolved(stack: Any, image: str) -> bool:
    nc = _custom(stack).get_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", NODE_CLASS)
    amis = (nc.get("status") or {}).get("amis") or []
    return bool(amis) and amis[0].get("id") == image


def _pool_images(stack: Any, image: str) -> tuple[int, int]:
    """(claims of the pool on `image`, claims of the pool), deleting ones left out."""
    claims = _custom(stack).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims",
                                                       label_selector=f"{L.NODEPOOL_LABEL}={NODE_POOL}")["items"]
    live = [c for c in claims if not c["metadata"].get("deletionTimestamp")]
    return sum(1 for c in live if (c.get("status") or {}).get("imageID") == image), len(live)


async def _drift_started(client: Any, since: datetime) -> bool:
    query = (f"WorkflowType = 'DisruptionWorkflow' AND NodeflowNodePool = '{NODE_POOL}' AND "
             f"NodeflowReason = '{L.REASON_DRIFTED}' AND StartTime > '{format_seconds(since)}'")
    async for _ in client.list_workflows(query, limit=1):
        return True
    return False
