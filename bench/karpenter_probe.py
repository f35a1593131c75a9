"""What bench/karpenter_suite.py samples while a phase runs: the processes' memory and CPU from /proc (the worker,
the Temporal dev server, moto_server, and this process, which hosts the simulator), and the simulated cluster
read straight from the simulator's store (no HTTP, so watching costs the API server nothing).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from api import labels as L
from bench.karpenter_verdict import p95, reserved_utilization
from bench.karpenter_world import POOL, SUITE_LABEL
from simulator.pods import condition_true, is_deleting, node_allocatable, pod_healthy, pod_requests
from simulator.resources import BY_KIND
from simulator.server import Simulator

PODS, NODES, CLAIMS = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["NodeClaim"]
DISRUPTED_TAINT = "karpenter.sh/disrupted"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (0 once it is gone)."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    return 0.0


def rss_mb(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@dataclass(eq=False)
class ProcessSampler(threading.Thread):
    """RSS and CPU seconds every `every` seconds, per named process."""

    pids: dict[str, int]
    every: float = 1.0
    rows: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)  # (t, rss MB, CPU s)
    stop_event: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        super().__init__(name="process-sampler", daemon=True)

    def run(self) -> None:
        while not self.stop_event.wait(self.every):
            self.sample()

    def sample(self) -> None:
        now = time.monotonic()
        for name, pid in self.pids.items():
            self.rows.setdefault(name, []).append((now, rss_mb(pid), cpu_seconds(pid)))

    def figures(self, t0: float, t1: float) -> dict[str, dict[str, float]]:
        """Per process over [t0, t1]: p95 and max RSS (MB), CPU seconds and average cores (per wall second)."""
        out = {}
        for name in self.pids:
            rows = [r for r in self.rows.get(name, []) if t0 <= r[0] <= t1]
            mem = [r[1] for r in rows]
            span = rows[-1][0] - rows[0][0] if len(rows) > 1 else 0.0
            cpu = rows[-1][2] - rows[0][2] if len(rows) > 1 else 0.0
            out[name] = {"p95MemoryMB": round(p95(mem), 1), "maxMemoryMB": round(max(mem, default=0.0), 1),
                         "cpuSeconds": round(cpu, 1), "avgCpuCores": round(cpu / span, 3) if span else 0.0}
        return out


@dataclass(frozen=True)
class ClusterView:
    """One look at the simulated cluster."""

    healthy: int  # the suite's pods Running and Ready, not deleting
    pods: int  # the suite's pods not deleting
    nodes: frozenset[str]  # the pool's nodes
    draining: int  # the pool's nodes deleting or tainted karpenter.sh/disrupted
    launching: int  # NodeClaims not deleting and not yet Ready
    scaled_wait: bool  # waiting on a time-scaled delay: a launch, a grace period, a pod starting
    cpu_util: float
    memory_util: float
    protected: frozenset[str] = frozenset()  # uids of the do-not-disrupt pods Running and Ready


def _protected(live: list[dict[str, Any]]) -> frozenset[str]:
    return frozenset(p["metadata"]["uid"] for p in live if pod_healthy(p)
                     and (p["metadata"].get("annotations") or {}).get(L.DO_NOT_DISRUPT_ANNOTATION) == "true")


def _draining(node: dict[str, Any]) -> bool:
    taints = (node.get("spec") or {}).get("taints") or []
    return is_deleting(node) or any(t.get("key") == DISRUPTED_TAINT for t in taints)


def _pool_nodes(sim: Simulator) -> list[dict[str, Any]]:
    return [n for n in sim.store.list(NODES) if (n["metadata"].get("labels") or {}).get(L.NODEPOOL_LABEL) == POOL]


def nodes_price(nodes: list[dict[str, Any]], prices: dict[str, float]) -> tuple[float, int]:
    """$/h of `nodes` at their instance types' on-demand `prices` (the suite's pool is on-demand only), and how many
    nodes had no such price (no instance-type label yet, or a type outside the table): counted, never guessed."""
    total, unpriced = 0.0, 0
    for n in nodes:
        price = prices.get((n["metadata"].get("labels") or {}).get(L.INSTANCE_TYPE_LABEL, ""))
        if price is None:
            unpriced += 1
        else:
            total += price
    return round(total, 2), unpriced


def pool_price(sim: Simulator, prices: dict[str, float]) -> tuple[float, int]:
    """The suite pool's nodes' $/h now (nodes_price)."""
    with sim.store.lock:
        nodes = _pool_nodes(sim)
    return nodes_price(nodes, prices)


def look(sim: Simulator) -> ClusterView:
    with sim.store.lock:
        pods = [p for p in sim.store.list(PODS) if (p["metadata"].get("labels") or {}).get(SUITE_LABEL)]
        nodes = _pool_nodes(sim)
        claims = list(sim.store.list(CLAIMS))
    live = [p for p in pods if not is_deleting(p)]
    launching = sum(1 for c in claims if not is_deleting(c) and not condition_true(c, "Ready"))
    bound_pending = any((p.get("spec") or {}).get("nodeName") and (p.get("status") or {}).get("phase") == "Pending"
                        for p in live)
    used: dict[str, list[float]] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node and (p.get("status") or {}).get("phase") in ("Pending", "Running"):
            cpu, mem = pod_requests(p)
            row = used.setdefault(node, [0.0, 0.0])
            row[0], row[1] = row[0] + cpu, row[1] + mem
    util = [(used.get(n["metadata"]["name"], [0.0, 0.0])[0], node_allocatable(n)[0],
             used.get(n["metadata"]["name"], [0.0, 0.0])[1], node_allocatable(n)[1]) for n in nodes]
    cpu_util, mem_util = reserved_utilization(util)
    return ClusterView(healthy=sum(1 for p in live if pod_healthy(p)), pods=len(live),
                       nodes=frozenset(n["metadata"]["name"] for n in nodes),
                       draining=sum(1 for n in nodes if _draining(n)), launching=launching,
                       scaled_wait=launching > 0 or len(live) < len(pods) or bound_pending,
                       cpu_util=round(cpu_util, 3), memory_util=round(mem_util, 3), protected=_protected(live))
