"""cProfile of every Python thread of the worker, for benchmarks (NODEFLOW_PROFILE).

A profiler on the main thread sees only the event loop, a third of the worker's CPU in a termination burst; the
rest runs on threads (the activities' blocking calls, the watch cache's informers, boto3) that it never sees. Each
thread started after `start` gets a profiler of its own, timed by that thread's CPU clock (a wall clock would
count every wait on a queue, a lock or a socket); `dump` merges them into one pstats file and writes the CPU time per
kind of thread beside it. Profiling costs CPU: read the shares, not the totals.
"""

from __future__ import annotations

import cProfile
import pstats
import re
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import Any


class ThreadProfiles:
    """One profiler per thread; the main thread's starts at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._profiles: list[tuple[str, cProfile.Profile]] = []

    def start(self) -> ThreadProfiles:
        threading.setprofile(self._first_call)
        self._add("main").enable()
        return self

    def _add(self, name: str) -> cProfile.Profile:
        profile = cProfile.Profile(time.thread_time)
        with self._lock:
            self._profiles.append((name, profile))
        return profile

    def _first_call(self, frame: FrameType, event: str, arg: Any) -> None:
        """Runs once in each new thread (threading.setprofile), then hands the thread to its own profiler."""
        sys.setprofile(None)
        self._add(threading.current_thread().name).enable()

    def dump(self, path: str | Path) -> None:
        """The merged stats at `path`, and `path`.threads: CPU seconds per kind of thread (the name
        without its numbers: `asyncio_`, `ThreadPoolExecutor-_`, an informer's name), most first."""
        threading.setprofile(None)
        with self._lock:
            profiles = list(self._profiles)
        merged: pstats.Stats | None = None
        by_kind: dict[str, float] = defaultdict(float)
        for name, profile in profiles:
            stats = pstats.Stats(_Finished(profile))  # type: ignore[arg-type]
            by_kind[re.sub(r"\d+", "_", name)] += stats.total_tt  # type: ignore[attr-defined]
            if merged is None:
                merged = stats
            else:
                merged.add(stats)
        if merged is not None:
            merged.dump_stats(str(path))
        lines = [f"{seconds:10.2f} s  {kind}" for kind, seconds in sorted(by_kind.items(), key=lambda kv: -kv[1])]
        Path(f"{path}.threads").write_text("\n".join(lines) + "\n")


class _Finished:
    """A profile's finished calls, for pstats. `pstats.Stats(profile)` would first end every call still open, by
    the clock of the thread that dumps: a thread blocked in a queue's get since the start would be charged the
    dumping thread's whole CPU time (2,000 s in a 40 s run)."""

    def __init__(self, profile: cProfile.Profile) -> None:
        profile.snapshot_stats()  # type: ignore[attr-defined]
        self.stats = profile.stats  # type: ignore[attr-defined]

    def create_stats(self) -> None:
        """Already made."""
