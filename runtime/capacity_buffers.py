"""The CapacityBuffer controller in the worker (docs/semantics.md §20): status, and provisioning for headroom.

Every `interval_seconds` (Karpenter's buffer controller requeues every 30 s and triggers its provisioner; 10 s here,
the planner's period) on the worker's watch cache: each buffer is resolved (planning/capacity_buffers.py) and its
virtual pods planned as the provisioner plans pending pods (planning/provisioning/provisioner.py decide). Its status
gets `replicas`, `podTemplateRef`/`podTemplateGeneration`, `provisioningStrategy` and the ReadyForProvisioning and
Provisioning conditions, written only when they change. When a buffer's chunks need new capacity, one
ProvisioningWorkflow is started for the virtual pods (its id from their uids: a run in progress is joined, not
doubled); it re-plans them on the live cluster and launches, as for a batch of pending pods. Virtual pods are never
created: they exist only in each simulation, so nothing can bind or evict them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client

from api.timestamps import format_seconds
from client.provisioning import start_provisioning
from contracts.provisioning import PodRef, ProvisioningSettings
from planning.capacity_buffers import (
    Resolution,
    provisioning_condition,
    resolve_all,
    status_body,
    status_changed,
    virtual_pods,
)
from planning.provisioning.provisioner import Headroom, decide
from runtime.periodic import tick_until_stopped

log = logging.getLogger(__name__)


@dataclass
class BufferSettings:
    task_queue: str
    interval_seconds: float = 10.0
    workflow: ProvisioningSettings | None = None


def headroom_refs(resolutions: list[Resolution], headroom: dict[str, Headroom]) -> list[PodRef]:
    """The virtual pods of every buffer whose chunks need a new NodeClaim, for one ProvisioningWorkflow."""
    needy = {key for key, room in headroom.items() if room.new}
    return [PodRef(key=f"{p['metadata']['namespace']}/{p['metadata']['name']}", uid=p["metadata"]["uid"], virtual=True)
            for res in resolutions if res.buffer.key in needy for p in virtual_pods(res)]


class CapacityBufferController:
    """Runs beside the pending-pod intake in the elected worker (runtime/worker_loop.py)."""

    def __init__(self, kube: Any, view: Any, client: Client, catalog: Callable[[], Any],
                 settings: BufferSettings) -> None:
        self._kube, self._view, self._client, self._catalog, self._s = kube, view, client, catalog, settings
        self._stop = asyncio.Event()
        self.started: list[str] = []  # workflow ids, for tests and logs

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        await tick_until_stopped(self.tick, self._stop, self._s.interval_seconds, "capacity buffers")

    async def tick(self) -> None:
        if not self._view.synced:
            return
        plan = await asyncio.to_thread(self._plan)
        if plan is None:
            return
        resolutions, headroom = plan
        await asyncio.to_thread(self._write_status, resolutions, headroom)
        refs = headroom_refs(resolutions, headroom)
        if refs:
            handle = await start_provisioning(self._client, refs, self._s.task_queue,
                                              self._s.workflow or ProvisioningSettings())
            if handle.id not in self.started:
                self.started.append(handle.id)
                log.info("provisioning %s for the headroom of %d CapacityBuffer chunk(s)", handle.id, len(refs))

    def _plan(self) -> tuple[list[Resolution], dict[str, Headroom]] | None:
        _objs, snapshot, parsed = self._view.read()
        resolutions = resolve_all(snapshot.others)
        if not resolutions:
            return None
        uids = [p["metadata"]["uid"] for res in resolutions for p in virtual_pods(res)]
        headroom = decide(snapshot, self._catalog(), pods=uids, parsed=parsed).headroom if uids else {}
        return resolutions, headroom

    def _write_status(self, resolutions: list[Resolution], headroom: dict[str, Headroom]) -> None:
        now = format_seconds(datetime.now(UTC))
        for res in resolutions:
            room = headroom.get(res.buffer.key)
            cond = provisioning_condition(res, sum(room.existing.values()) if room is not None else None,
                                          room.new if room else 0, room.failed if room else 0)
            body = status_body(res, cond, now)
            if not status_changed(res, body):
                continue
            try:
                self._kube.patch_capacity_buffer_status(res.buffer.namespace, res.buffer.name, {"status": body})
            except Exception as exc:  # a buffer deleted meanwhile, a conflict: the next tick writes it again
                log.warning("could not write the status of CapacityBuffer %s: %s", res.buffer.key, exc)
