"""The soak's worker Deployment: replicas of `python worker.py` under leader election, supervised as a kubelet
would (a replica that exits is started again RESTART_DELAY later), and the leader SIGKILLed on a period.

Each replica runs with HOSTNAME `soak-<name>`, so its Lease identity (`soak-<name>_<random>`, runtime/leader.py)
names it. After a kill the Lease is read every step until another identity holds it: the takeover time, which the
design bounds by the lease duration (nothing releases a SIGKILLed holder's Lease) plus a retry period. Counted:
leader kills, holder changes seen, takeover seconds, and exits nobody asked for (a replica that fell over on its
own, which the soak fails on); the cloud retries each replica reports on /metrics, summed over its lives.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from kubernetes import client as k8s

from bench.soak_churn import retry
from bench.soak_world import ROOT, World
from bench.worker_metrics import read, totals
from devstack.processes import free_port
from runtime.leader import DEFAULT_LEASE_NAME

RESTART_DELAY = 10.0  # seconds: a killed pod's container is restarted after the kubelet's first back-off
LEASE_NAMESPACE = "default"  # the worker's election namespace outside a pod (runtime/leader.py)
HOSTNAME_PREFIX = "soak-"
RETRY_FAMILIES = ("nodeflow_cloud_api_sdk_retries", "nodeflow_cloud_api_retries")  # botocore's, the gateway's


def replica_of(identity: str) -> str:
    """The replica name in a Lease holder identity (`soak-b_1a2b3c4d` -> `b`); empty when it is none of ours."""
    host = identity.split("_", 1)[0]
    return host.removeprefix(HOSTNAME_PREFIX) if host.startswith(HOSTNAME_PREFIX) else ""


def cloud_retries(metrics_text: str) -> float:
    """EC2 requests a worker sent again, from its Prometheus text page: botocore's retries
    (`nodeflow_cloud_api_sdk_retries_total`) and the gateway's (`nodeflow_cloud_api_retries_total`), every label set."""
    return sum(sum(totals(metrics_text, family, ()).values()) for family in RETRY_FAMILIES)


@dataclass
class Replica:
    name: str
    proc: subprocess.Popen | None = None
    metrics_port: int = 0
    starts: int = 0
    killed: bool = False  # the soak killed it: its exit is expected
    down_since: float | None = None
    retries_now: float = 0.0  # the current life's counter, last scraped
    retries_before: float = 0.0  # earlier lives' counters, summed

    @property
    def life(self) -> str:
        return f"{self.name}#{self.starts}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class LeaderLog:
    """What the soak saw of the Lease: kills, holder changes, takeovers, and exits nobody asked for."""

    holder: str = ""
    kills: int = 0
    changes: int = 0
    takeovers: list[float] = field(default_factory=list)
    pending_kill: tuple[float, str] | None = None  # (when, identity killed) until another holder shows
    unexpected_exits: list[str] = field(default_factory=list)

    def observe(self, identity: str, now: float, acquired: float | None = None) -> str:
        """Note the holder now; returns a line when it changed (and the takeover it ends, after a kill). `now` and
        the kill are wall-clock seconds; `acquired` is the Lease's own acquireTime when it has one, which times the
        takeover where it happened rather than where the soak's polling saw it (a step with a sample in it takes
        seconds)."""
        if not identity or identity == self.holder:
            return ""
        before, self.holder = self.holder, identity
        if before:
            self.changes += 1
        line = f"leader: {identity} (was {before or 'none'})"
        if self.pending_kill is not None and identity != self.pending_kill[1]:
            took = round((acquired if acquired is not None else now) - self.pending_kill[0], 1)
            self.takeovers.append(took)
            self.pending_kill = None
            line += f", {took} s after the kill"
        return line

    def figures(self) -> dict[str, Any]:
        return {"leaderKills": self.kills, "leaderChanges": self.changes, "takeoverSeconds": self.takeovers,
                "takeoverMaxSeconds": max(self.takeovers, default=None),
                "unexpectedExits": list(self.unexpected_exits)}


class Replicas:
    """The Deployment: start, supervise, kill the leader; `world.worker` is kept on replica `a`'s process."""

    def __init__(self, world: World, count: int, kill_every: float | None) -> None:
        if count < 1:
            raise ValueError("the soak needs at least one worker replica")
        if kill_every is not None and count < 2:
            raise ValueError("killing the leader needs at least two replicas (nothing would take over)")
        self.world, self.kill_every = world, kill_every
        self.all = {chr(ord("a") + i): Replica(chr(ord("a") + i)) for i in range(count)}
        self.log = LeaderLog()
        self.next_kill: float | None = None

    def command(self, port: int) -> list[str]:
        cmd = self.world.worker_command()
        cmd[cmd.index("--metrics-port") + 1] = str(port)
        return cmd

    def start(self, r: Replica) -> None:
        r.metrics_port, r.starts, r.killed, r.down_since = free_port(), r.starts + 1, False, None
        r.retries_before += r.retries_now
        r.retries_now = 0.0
        env = dict(os.environ, PYTHONPATH=str(ROOT), HOSTNAME=f"{HOSTNAME_PREFIX}{r.name}",
                   NODEFLOW_PLANNER_SECONDS=str(self.world.o.planner_seconds))
        with (self.world.o.workdir / f"worker-{r.life}.log").open("ab") as log:
            r.proc = subprocess.Popen(self.command(r.metrics_port), cwd=ROOT, env=env,
                                      stdout=subprocess.DEVNULL, stderr=log)
        if r.name == "a":
            self.world.worker, self.world.metrics_port = r.proc, r.metrics_port

    def start_all(self) -> None:
        for r in self.all.values():
            self.start(r)

    def begin(self, now: float) -> None:
        """The first leader kill comes one period after the churn starts."""
        self.next_kill = None if self.kill_every is None else now + self.kill_every

    def leader(self) -> str:
        """The Lease holder's identity now ('' when none holds it or the Lease is not there yet)."""
        return self.lease()[0]

    def lease(self) -> tuple[str, float | None]:
        """The Lease's holder and its acquireTime in epoch seconds (None: not set, or no Lease yet)."""
        assert self.world.sim is not None
        try:
            lease = retry(k8s.CoordinationV1Api(self.world.sim.api_client()).read_namespaced_lease,
                          DEFAULT_LEASE_NAME, LEASE_NAMESPACE)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return "", None
            raise
        acquired = lease.spec.acquire_time
        if acquired is not None and acquired.tzinfo is None:
            acquired = acquired.replace(tzinfo=UTC)  # MicroTime is UTC; a naive copy would read as local time
        return lease.spec.holder_identity or "", acquired.timestamp() if acquired is not None else None

    def step(self, now: float) -> list[str]:
        """Supervise, scrape, note the holder, kill the leader when due; returns what happened."""
        lines = self.supervise(now)
        self.scrape()
        holder, acquired = self.lease()
        # wall clock, as the Lease's acquireTime: the step's `now` came out seconds off either way under load
        # (24.8 s for a wall 18 s, 2026-11-29), and polling adds the step's own length
        if line := self.log.observe(holder, time.time(), acquired):
            lines.append(line)
        if self.kill_every is not None and self.next_kill is not None and now >= self.next_kill:
            self.next_kill = now + self.kill_every
            lines.append(self.kill_leader())
        return lines

    def supervise(self, now: float) -> list[str]:
        lines = []
        for r in self.all.values():
            if r.proc is None or r.alive():
                continue
            if r.down_since is None:
                r.down_since = now
                if not r.killed:
                    self.log.unexpected_exits.append(f"{r.life} rc={r.proc.returncode}")
                    lines.append(f"replica {r.life} exited on its own (rc={r.proc.returncode}): see its log")
            if now - r.down_since >= RESTART_DELAY:
                self.start(r)
                lines.append(f"replica {r.name} started again ({r.life})")
        return lines

    def kill_leader(self) -> str:
        """SIGKILL the Lease holder; the takeover is timed from the signal itself."""
        identity = self.leader()
        r = self.all.get(replica_of(identity))
        if r is None or not r.alive():
            return f"leader kill skipped: the Lease holder is {identity or 'nobody'}"
        r.killed = True
        r.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        self.log.kills += 1
        self.log.pending_kill = (time.time(), identity)
        return f"SIGKILL leader {identity} ({r.life})"

    def scrape(self) -> None:
        for r in self.all.values():
            if not r.alive():
                continue
            text = read(r.metrics_port, attempts=1, timeout=2.0)  # a missed scrape keeps the last reading
            if text is not None:
                r.retries_now = cloud_retries(text)

    def cloud_retries(self) -> float:
        return sum(r.retries_before + r.retries_now for r in self.all.values())

    def figures(self) -> dict[str, Any]:
        return {**self.log.figures(), "cloudRetries": self.cloud_retries(),
                "replicaStarts": {r.name: r.starts for r in self.all.values()}}

    def pids(self) -> dict[str, int]:
        return {r.life: r.proc.pid for r in self.all.values() if r.proc is not None and r.alive()}

    def any_alive(self) -> bool:
        return any(r.alive() or r.down_since is not None for r in self.all.values())

    def stop(self) -> None:
        for r in self.all.values():
            if r.alive():
                r.proc.terminate()  # type: ignore[union-attr]
        deadline = time.monotonic() + 20
        for r in self.all.values():
            if r.proc is not None:
                try:
                    r.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    r.proc.kill()
                    r.proc.wait(10)


class ReplicaWorld(World):
    """The soak's world with its worker as a Deployment of `replicas` (see the module docstring)."""

    replicas: Replicas

    def start_worker(self) -> None:
        self.replicas.start_all()

    def worker_alive(self) -> bool:
        return self.replicas.any_alive()

    def stop_worker(self) -> None:
        """Every replica (World.stop calls this before it stops the rest of the stack)."""
        self.replicas.stop()
        self.worker = None
