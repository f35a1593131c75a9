"""One call per object over many objects, a bounded number in flight (docs/decisions.md §29).

An activity that writes to hundreds of objects one call after another outlasts its 30 s timeout on a loaded machine:
1,000 Launched Events of a provisioning batch did, and so did tainting, and starting the terminations of, the 300 empty
nodes of one Emptiness command in Karpenter's hostname-spreading-xl scenario (five timeouts, three minutes before the
nodes began to go). A few calls still go one after another (no threads for a single-node command).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = 8  # blocking calls in flight for one activity (the kube client pools 64 connections)
STARTS = 16  # coroutine calls in flight (Temporal client starts share one gRPC channel)


def each(fn: Callable[[T], R], items: Sequence[T], threads: int = THREADS) -> list[R]:
    """`fn` over `items`, results in order; over `threads` items on that many threads. The first failure is raised,
    as one by one (the calls already begun finish first)."""
    if len(items) <= threads:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(threads, thread_name_prefix="fan-out") as pool:
        return list(pool.map(fn, items))


async def each_async(fn: Callable[[T], Awaitable[R]], items: Sequence[T], limit: int = STARTS) -> list[R]:
    """`await fn(x)` for every item, at most `limit` at once, results in order. The first failure is raised once
    every call has ended, so none is left running behind the activity."""
    gate = asyncio.Semaphore(limit)

    async def one(x: T) -> R:
        async with gate:
            return await fn(x)

    results = await asyncio.gather(*(one(x) for x in items), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results  # type: ignore[return-value]
