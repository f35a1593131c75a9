"""How bench/karpenter_suite.py runs one phase and decides it is over, mirroring Karpenter's suite (report.go):

- scale-out: from creating the workloads until every expected pod is Running and Ready;
- consolidation: from scaling the workloads down until the expected pods are healthy and no node has launched,
  drained or gone for a quiet window; the phase ends at the last such change (Karpenter adds its 3-minute quiet
  window to its figure; this one does not);
- drift: from the template change until none of the nodes that existed before it remains, nothing drains or
  launches, and every pod is healthy.
The cluster is read from the simulator's store every TICK seconds; a tick during which the phase waits on a
time-scaled delay counts toward the simulated time (bench/karpenter_verdict.py `simulated_seconds`).
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field

from bench.karpenter_probe import ClusterView, look
from bench.karpenter_scenarios import Phase
from simulator.server import Simulator

TICK = 0.5
PROGRESS_EVERY = 15.0


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class PhaseWatch:
    """The running record of one phase: when it started, its last change, the time spent on scaled waits."""

    phase: Phase
    t0: float
    quiet: float
    old_nodes: frozenset[str] = frozenset()
    last_change: float = 0.0
    scaled: list[tuple[float, float]] = field(default_factory=list)  # (tick end, tick seconds) on scaled waits
    last: ClusterView | None = None
    max_nodes: int = 0

    def observe(self, view: ClusterView, now: float, dt: float) -> None:
        if view.scaled_wait:
            self.scaled.append((now, dt))
        prev = self.last
        if prev is None or view.nodes != prev.nodes or view.draining or view.launching \
                or view.healthy != self.phase.pods:
            self.last_change = now
        self.max_nodes = max(self.max_nodes, len(view.nodes))
        self.last = view

    def done(self, view: ClusterView, now: float) -> bool:
        settled = view.healthy == self.phase.pods == view.pods and not view.draining and not view.launching
        if self.phase.kind == "scaleOut":
            return view.healthy >= self.phase.pods and view.pods == self.phase.pods
        if self.phase.kind == "drift":
            return settled and not (view.nodes & self.old_nodes)
        return settled and now - self.last_change >= self.quiet

    def end(self, now: float) -> float:
        """When the phase's work ended: now for scale-out and drift, the last change for consolidation."""
        return self.last_change if self.phase.kind == "consolidation" else now

    def scaled_seconds(self, until: float) -> float:
        return sum(dt for t, dt in self.scaled if t <= until)


async def watch(sim: Simulator, w: PhaseWatch, timeout: float) -> tuple[float, bool]:
    """Until the phase is done or `timeout` wall seconds pass; returns its end (monotonic) and whether it
    finished."""
    prev, next_progress = w.t0, w.t0 + PROGRESS_EVERY
    while True:
        await asyncio.sleep(TICK)
        now = time.monotonic()
        view = await asyncio.to_thread(look, sim)
        w.observe(view, now, now - prev)
        prev = now
        if w.done(view, now):
            return w.end(now), True
        if now - w.t0 > timeout:
            return now, False
        if now >= next_progress:
            next_progress += PROGRESS_EVERY
            say(f"  {w.phase.name} t={now - w.t0:.0f}s healthy={view.healthy}/{w.phase.pods} pods={view.pods} "
                f"nodes={len(view.nodes)} launching={view.launching} draining={view.draining} "
                f"old={len(view.nodes & w.old_nodes)}")
