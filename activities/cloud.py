"""EC2 activities of the termination workflow: terminate an instance idempotently and wait until it goes.

Describe first and call TerminateInstances only for an instance that is still alive, so a retried or
replayed termination never terminates twice; an instance that is already gone counts as done.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from botocore.exceptions import ClientError
from kubernetes.client.rest import ApiException
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.cached_copies import CacheReads, deleting_copy
from api.events import EventReason
from api.provider_id import instance_id_from_provider_id
from contracts.errors import ErrorType
from contracts.termination import InstanceInput, InstanceResult
from gateways.ec2 import CloudErrorKind, CloudProvider, classify, cloud_provider, error_code
from gateways.kube import Conflict, KubeClient, event_body
from planning.lifecycle.disruption_conditions import instance_terminating
from telemetry import karpenter_metrics as km
from telemetry.karpenter_metrics import cloudprovider_call

log = logging.getLogger(__name__)
T = TypeVar("T")

DONE_STATES = ("shutting-down", "terminated")


class CloudActivities:
    """Activities over the cloud provider (blocking calls in a private thread pool)."""

    def __init__(self, ec2: CloudProvider | Any, max_threads: int = 16, poll: float = 0.5,
                 kube: KubeClient | None = None, cached: CacheReads | None = None) -> None:
        self.ec2 = cloud_provider(ec2)
        self.kube = kube  # marks the NodeClaim InstanceTerminating (docs/semantics.md §18); None: not marked
        self.cached = cached  # the claim's first attempt for that mark, when the cache shows it deleting
        self.poll = poll
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="ec2")

    async def _io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    def _state(self, instance_id: str) -> str:
        """The instance state name, or "gone" when EC2 no longer knows it."""
        try:
            instances = self.ec2.instances(ids=[instance_id])
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"):
                return "gone"
            raise
        for inst in instances:
            if inst.get("InstanceId") == instance_id:
                return str(inst.get("State", {}).get("Name", "unknown"))
        return "gone"

    def _terminate(self, instance_id: str) -> str:
        """TerminateInstances; returns the state it reports (so a done termination needs no extra describe)."""
        try:
            changes = self.ec2.terminate([instance_id])
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "InvalidInstanceID.NotFound":
                raise
            return "gone"
        for change in changes:
            if change.get("InstanceId") == instance_id:
                return str((change.get("CurrentState") or {}).get("Name", "unknown"))
        return "unknown"

    @activity.defn(name="termination.instance_state")
    async def instance_state(self, inp: InstanceInput) -> InstanceResult:
        """Only look: is the instance still there? (A NotReady node whose instance is gone needs no drain.)"""
        instance_id = instance_id_from_provider_id(inp.provider_id)
        if instance_id is None:
            return InstanceResult(state="unknown")
        return InstanceResult(instance_id=instance_id, state=await self._io(self._state, instance_id))

    @activity.defn(name="termination.terminate_instance")
    async def terminate_instance(self, inp: InstanceInput) -> InstanceResult:
        """`_terminate_instance`; EC2 refusing the credentials (UnauthorizedOperation) is said once on the NodeClaim
        (or Node) with the IAM action, then retried on Temporal's backoff: the instance still runs, and giving up
        would leak it, so the termination finishes once an operator fixes the credentials."""
        try:
            return await self._terminate_instance(inp)
        except ClientError as exc:
            if classify(exc) is not CloudErrorKind.UNAUTHORIZED:
                raise
            action = f"ec2:{exc.operation_name}"
            message = (f"EC2 refused {exc.operation_name} ({error_code(exc)}) for {inp.provider_id}: the worker's "
                       f"credentials need IAM action {action}; the termination retries until they have it")
            await self._io(self._say_unauthorized, inp, message)
            raise ApplicationError(message, action, type=ErrorType.CLOUD_UNAUTHORIZED.value) from exc

    def _say_unauthorized(self, inp: InstanceInput, message: str) -> None:
        """A Warning Event, once per object (named, so a retry's is a 409), on the NodeClaim else the Node."""
        log.error(message, extra={"node": inp.node_name})
        kind, name = ("NodeClaim", inp.node_claim_name) if inp.node_claim_name else ("Node", inp.node_name)
        if self.kube is None or not name:
            return
        try:
            self.kube.create_event(event_body(kind, name, EventReason.CLOUD_UNAUTHORIZED, message, datetime.now(UTC),
                                              type_="Warning", event_name=f"{name}.cloud-unauthorized"))
        except Exception as exc:  # already said (409), or the API is away: the log and the metric remain
            log.debug("CloudUnauthorized event of %s %s not written: %s", kind, name, exc)

    async def _terminate_instance(self, inp: InstanceInput) -> InstanceResult:
        instance_id = instance_id_from_provider_id(inp.provider_id)
        if instance_id is None:  # retrying cannot help: say so in the UI instead of retrying forever
            raise ApplicationError(f"not an EC2 providerID: {inp.provider_id!r}",
                                   type=ErrorType.INVALID_PROVIDER_ID.value, non_retryable=True)
        state = await self._io(self._state, instance_id)
        called = False
        started = time.perf_counter()
        if state not in (*DONE_STATES, "gone"):
            log.info("TerminateInstances %s (node %s)", instance_id, inp.node_name,
                     extra={"instance": instance_id, "node": inp.node_name})
            with cloudprovider_call("nodeclaim.lifecycle", "Delete"):
                state = await self._io(self._terminate, instance_id)
            called = True
        await self._io(self._mark_terminating, inp.node_claim_name)
        local = activity.info().is_local  # local activities cannot heartbeat
        while state not in (*DONE_STATES, "gone"):
            if not local:
                activity.heartbeat({"instance": instance_id, "state": state})
            await asyncio.sleep(self.poll)
            state = await self._io(self._state, instance_id)
        if called:  # nodeclaim/lifecycle: from TerminateInstances until the instance is shutting down or gone
            km.INSTANCE_TERMINATION_DURATION.labels(nodepool="").observe(time.perf_counter() - started)
        return InstanceResult(instance_id=instance_id, state=state, terminate_called=called)

    def _mark_terminating(self, claim: str | None) -> None:
        """Karpenter's InstanceTerminating once the instance's deletion was asked for (a marker: never fails)."""
        if self.kube is None or not claim:
            return
        try:
            self.kube.update("NodeClaim", claim, instance_terminating(datetime.now(UTC)), status=True,
                             current=deleting_copy(self.cached, "NodeClaim", claim))
        except (ApiException, Conflict) as exc:
            log.warning("NodeClaim %s: InstanceTerminating not written: %s", claim, exc)

    def all(self) -> list[Callable[..., Any]]:
        return [self.instance_state, self.terminate_instance]
