"""TerminateInstances and DescribeInstances of one instance each, merged into one call per short window, as Karpenter's
AWS provider batches them (its pkg/batcher: a window closes 100 ms after its last request or 1 s after its first,
at most 500 ids a call).

A 1,000-node deletion asks EC2 about each instance at least twice (the look before TerminateInstances, the call
itself) and again every poll until it is shutting down: one call per instance would be thousands of calls EC2
throttles. Callers are the termination activities' threads; each blocks on its own answer. The thread that opens
a window waits for it to close and makes the call; every caller gets only its own instance's answer. One bad id
must not fail the others: a merged call that raises (EC2 refuses a whole DescribeInstances for one unknown id) or
leaves an instance running is asked again one id at a time, and each caller gets its own result or error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from gateways.ec2 import CloudProvider, Filter, Instance

R = TypeVar("R")
DONE_STATES = ("shutting-down", "terminated")


@dataclass(frozen=True)
class Window:
    """Karpenter's batcher options for both calls."""

    idle_seconds: float = 0.1
    max_seconds: float = 1.0
    max_items: int = 500


@dataclass
class _Open(Generic[R]):
    opened: float
    last: float
    waiting: dict[str, list[Future[R]]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.waiting)


class IdBatcher(Generic[R]):
    """Requests for one id each, run as one `execute` over the ids of a window; `execute` answers per id, a value
    or an exception, and must answer every id it was given."""

    def __init__(self, execute: Callable[[list[str]], dict[str, R | BaseException]], window: Window = Window(),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._execute = execute
        self._w = window
        self._clock = clock
        self._cond = threading.Condition()
        self._open: _Open[R] | None = None
        self.calls: list[int] = []  # ids per merged call made, for tests and the benchmark

    def submit(self, item: str) -> R:
        """Block until the window holding `item` ran; its answer, or its error raised here."""
        fut: Future[R] = Future()
        with self._cond:
            batch, now = self._open, self._clock()
            lead = batch is None or (len(batch) >= self._w.max_items and item not in batch.waiting)
            if lead:  # none open, or the open one is full (its leader is taking it): open the next
                batch = self._open = _Open(opened=now, last=now)
            assert batch is not None
            batch.waiting.setdefault(item, []).append(fut)
            batch.last = now
            self._cond.notify_all()
        if lead:
            self._run(self._close(batch))
        return fut.result()

    def _close(self, batch: _Open[R]) -> _Open[R]:
        """Wait until the window closes (idle, max age or full) and take it; new requests open the next."""
        with self._cond:
            while True:
                now = self._clock()
                idle_left = batch.last + self._w.idle_seconds - now
                max_left = batch.opened + self._w.max_seconds - now
                if len(batch) >= self._w.max_items or idle_left <= 0 or max_left <= 0:
                    if self._open is batch:
                        self._open = None
                    return batch
                self._cond.wait(timeout=min(idle_left, max_left))

    def _run(self, batch: _Open[R]) -> None:
        ids = list(batch.waiting)
        self.calls.append(len(ids))
        try:
            answers = self._execute(ids)
        except BaseException as exc:  # execute answers per id; a bug in it must still free every caller
            answers = dict.fromkeys(ids, exc)
        for item, futs in batch.waiting.items():
            answer = answers.get(item, KeyError(item))
            for fut in futs:
                if isinstance(answer, BaseException):
                    fut.set_exception(answer)
                else:
                    fut.set_result(answer)


def terminate_each(cloud: CloudProvider) -> Callable[[list[str]], dict[str, Any]]:
    """One TerminateInstances for the ids; an id the merged call did not report shutting down or terminated (or
    every id, when the call failed) asked again alone: its own answer or error."""
    def execute(ids: list[str]) -> dict[str, list[dict[str, Any]] | BaseException]:
        out: dict[str, list[dict[str, Any]] | BaseException] = {}
        try:
            changes = cloud.terminate(ids)
        except Exception:  # each id is asked alone below, and its caller gets that answer
            changes = []
        for change in changes:
            if (change.get("CurrentState") or {}).get("Name") in DONE_STATES:
                out[change.get("InstanceId", "")] = [change]
        for item in ids:
            if item not in out:
                out[item] = _alone(lambda i=item: cloud.terminate([i]))
        return out
    return execute


def describe_each(cloud: CloudProvider) -> Callable[[list[str]], dict[str, Any]]:
    """One DescribeInstances for the ids; when it fails (one unknown id fails them all) each id is asked alone.
    An id EC2 does not list answers an empty list, as a call for it alone would."""
    def execute(ids: list[str]) -> dict[str, list[Instance] | BaseException]:
        try:
            found = cloud.instances(ids=ids)
        except Exception:
            return {item: _alone(lambda i=item: cloud.instances(ids=[i])) for item in ids}
        out: dict[str, list[Instance] | BaseException] = {item: [] for item in ids}
        for inst in found:
            if isinstance(mine := out.get(inst.get("InstanceId", "")), list):
                mine.append(inst)
        return out
    return execute


def _alone(call: Callable[[], R]) -> R | BaseException:
    try:
        return call()
    except Exception as exc:
        return exc


class BatchedCloud:
    """A CloudProvider whose one-id TerminateInstances and DescribeInstances go through an IdBatcher each; every
    other call (and a call for several ids or by filters) goes to the cloud as it is."""

    def __init__(self, cloud: CloudProvider, window: Window = Window()) -> None:
        self.cloud = cloud
        self.terminates: IdBatcher[list[dict[str, Any]]] = IdBatcher(terminate_each(cloud), window)
        self.describes: IdBatcher[list[Instance]] = IdBatcher(describe_each(cloud), window)

    @property
    def region(self) -> str | None:
        return self.cloud.region

    def instances(self, *, ids: Sequence[str] | None = None, filters: Sequence[Filter] | None = None
                  ) -> list[Instance]:
        if ids is not None and len(ids) == 1 and filters is None:
            return self.describes.submit(ids[0])
        return self.cloud.instances(ids=ids, filters=filters)

    def all_instances(self, filters: Sequence[Filter]) -> list[Instance]:
        return self.cloud.all_instances(filters)

    def launch(self, params: dict[str, Any]) -> Instance:
        return self.cloud.launch(params)

    def terminate(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        if len(ids) == 1:
            return self.terminates.submit(ids[0])
        return self.cloud.terminate(ids)

    def describe(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.cloud.describe(operation, params)
