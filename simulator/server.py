"""`Simulator`: the API server and the world loop in a background thread with its own event loop, so that
synchronous `kubernetes` client code and async Temporal tests can both use it.

    with Simulator(scenario="cluster.yaml", time_scale=0.01) as sim:
        v1 = kubernetes.client.CoreV1Api(sim.api_client())
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import yaml
from aiohttp import web

from simulator.api import ApiServer
from simulator.ec2 import Ec2World
from simulator.faults import Faults
from simulator.scenario import prepare, read_snapshot
from simulator.scheduler_timing import SchedulerTiming
from simulator.store import Store
from simulator.world import DEFAULT_READY_JITTER, World

log = logging.getLogger(__name__)
EC2_POLL_PAUSE_CAP = 3.0  # seconds; the quarter-of-the-time rule at ~1 s for the steady listing of 1,000 instances
# wall seconds one tick's scheduling pass may take: the world ticks on the API server's loop, and a whole pass over
# 2,000 pending pods and 1,000 nodes held every request for up to 7 s (docs/decisions.md §20)
SCHEDULE_SLICE = 0.1


def ec2_poll_pause(poll_seconds: float, spent: float) -> float:
    """The pause after an EC2 poll that took `spent` seconds (see `Simulator._ec2_loop`)."""
    return max(poll_seconds, min(3 * spent, EC2_POLL_PAUSE_CAP))
T = TypeVar("T")


def kubeconfig_document(server: str, name: str = "nodeflow-sim") -> dict[str, Any]:
    """A kubeconfig that the kubernetes client and kubectl accept as is (plain HTTP on loopback)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": {"token": "nodeflow-sim"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }


class Simulator:
    """A running simulated cluster. Use as a context manager, or call start() / stop()."""

    def __init__(self, scenario: str | Path | None = None, ec2_endpoint: str | None = None,
                 time_scale: float = 1.0, ready_delay: float = 2.0, port: int = 0,
                 kubeconfig_path: str | Path | None = None, host: str = "127.0.0.1",
                 objects: list[dict[str, Any]] | None = None, tick_seconds: float = 0.01,
                 ec2_poll_seconds: float = 0.25, region: str = "us-east-1", pod_start_delay: float = 3.0,
                 cluster_name: str | None = None, scheduler_timing: SchedulerTiming | None = None,
                 ready_jitter: float = DEFAULT_READY_JITTER, seed: int | None = 0,
                 schedule_slice: float | None = SCHEDULE_SLICE) -> None:
        """`scheduler_timing` None is a real kube-scheduler's (SchedulerTiming()); `ready_jitter` varies each node's
        ready delay and each pod's start delay by up to that fraction, drawn from a RNG seeded with `seed`;
        `schedule_slice` is the wall time one tick's scheduling pass may take before the API is answered again
        (None: the whole pass)."""
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.store = Store()
        self.world = World(self.store, time_scale=time_scale, ready_delay=ready_delay,
                           pod_start_delay=pod_start_delay, scheduler_timing=scheduler_timing,
                           ready_jitter=ready_jitter, seed=seed)
        self.faults = Faults()
        self.server = ApiServer(self.world, self.faults)
        self.host = host
        self.port = port
        self.tick_seconds = tick_seconds
        self.schedule_slice = schedule_slice
        self.ec2_poll_seconds = ec2_poll_seconds
        self.ec2_endpoint = ec2_endpoint
        self.region = region
        self.cluster_name = cluster_name  # instances whose bootstrap names it join, besides those naming base_url
        self._scenario = scenario
        self._initial_objects = objects
        self._kubeconfig_arg = Path(kubeconfig_path) if kubeconfig_path else None
        self._tmpdir: tempfile.TemporaryDirectory | None = None
        self.kubeconfig_path: str = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # ---- lifecycle ---------------------------------------------------------------------------------------
    def __enter__(self) -> Simulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Simulator:
        if self.ec2_endpoint:
            self.world.ec2 = Ec2World(self.world, self.ec2_endpoint, region=self.region,
                                      cluster_name=self.cluster_name)
        if self._scenario:
            self.load_objects(read_snapshot(self._scenario), initial=True, copy=False)
        self.load_objects(self._initial_objects or [], initial=True)  # also creates the default namespaces
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        if self.world.ec2 is not None:
            self.world.ec2.identity.url = self.base_url  # nodes whose bootstrap names this URL join
        self._write_kubeconfig()
        self._thread = threading.Thread(target=self._run, args=(sock,), name=f"simulator-{self.port}", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise RuntimeError(f"simulator failed to start: {self._error}") from self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(15)
        self._thread = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def wait(self) -> None:
        """Block until the server thread ends (for the foreground CLI)."""
        thread = self._thread
        while thread is not None and thread.is_alive():
            thread.join(0.5)

    def _run(self, sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(sock))
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            log.exception("simulator stopped with an error")
        finally:
            loop.close()

    async def _serve(self, sock: socket.socket) -> None:
        self._stop = asyncio.Event()
        runner = web.AppRunner(self.server.app(), access_log=None, handle_signals=False,
                               shutdown_timeout=0.5)
        await runner.setup()
        site = web.SockSite(runner, sock)
        await site.start()
        tasks = [asyncio.create_task(self._world_loop())]
        if self.world.ec2 is not None:
            tasks.append(asyncio.create_task(self._ec2_loop()))
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.server.close_watches()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await runner.cleanup()

    async def _world_loop(self) -> None:
        while True:
            try:
                self.world.tick(self.schedule_slice)
            except Exception:
                log.exception("world tick failed")
            await asyncio.sleep(self.tick_seconds)

    async def _ec2_loop(self) -> None:
        loop = asyncio.get_running_loop()
        ec2 = self.world.ec2
        first = True
        while True:
            started = time.monotonic()
            try:
                instances = await loop.run_in_executor(None, ec2.describe)
                ec2.apply(instances)
            except Exception:
                log.exception("EC2 sync failed")
            # A poll of 1,000+ instances costs moto ~1 s; polling at most a quarter of the time leaves moto
            # to the EC2 calls under test (docs/decisions.md §17). Not after the first poll: a cold moto takes
            # seconds to answer its first call, and waiting three times that delayed every first registration.
            # Never more than EC2_POLL_PAUSE_CAP: a poll that first reads hundreds of new instances (their user
            # data, one call each) is long once, and three times it kept 499 of 500 launched instances of
            # Karpenter's do-not-disrupt scenario unregistered for five minutes.
            spent = 0.0 if first else time.monotonic() - started
            first = False
            await asyncio.sleep(ec2_poll_pause(self.ec2_poll_seconds, spent))

    def _write_kubeconfig(self) -> None:
        if self._kubeconfig_arg is not None:
            path = self._kubeconfig_arg
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="nodeflow-sim-")
            path = Path(self._tmpdir.name) / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig_document(self.base_url), sort_keys=False), encoding="utf-8")
        os.chmod(path, 0o600)
        self.kubeconfig_path = str(path)

    # ---- access ------------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def api_client(self) -> Any:
        """A fresh kubernetes.client.ApiClient talking to this simulator."""
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.base_url
        cfg.verify_ssl = False
        cfg.api_key = {"authorization": "nodeflow-sim"}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        return client.ApiClient(cfg)

    def stats(self) -> dict[str, Any]:
        return self.server.stats()

    def outage(self, seconds: float | None = None) -> None:
        """Every API request answers 503 for `seconds` of wall time, or until end_outage(); open watches break."""
        self._on_loop(self.server.start_outage(seconds))

    def end_outage(self) -> None:
        self.faults.end_outage()

    def cut_watches(self) -> int:
        """End every open watch stream now; returns how many were open."""
        return self._on_loop(self.server.cut_watches())

    def gone_on_next_resume(self, count: int = 1) -> int:
        """The next `count` watches resuming from a resourceVersion get 410 Gone; returns how many are armed."""
        return self.faults.arm_gone(count)

    def _on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the server's event loop, which owns the open watches (the caller is another thread)."""
        if self._loop is None or self._thread is None:
            coro.close()
            raise RuntimeError("the simulator is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def ledger(self) -> list[dict[str, Any]]:
        return self.world.ledger.entries()

    def inject_faults(self, rate: float = 0.0, codes: tuple[int, ...] = (429, 500, 409), latency: float = 0.0,
                      methods: tuple[str, ...] | None = None, resources: tuple[str, ...] | None = None) -> None:
        """Answer `rate` of resource requests with one of `codes`, and delay every one by `latency` seconds."""
        self.faults.set(rate=rate, codes=codes, latency=latency, methods=methods, resources=resources)

    def load_objects(self, objects: list[dict[str, Any]], initial: bool = False, copy: bool = True) -> int:
        """Add snapshot objects (Nodes, Pods, NodeClaims, ...) to the running cluster; returns how many.

        Objects already present (same kind, namespace and name) are skipped. copy=False stores the given
        dicts themselves (faster for big generated clusters the caller hands over).
        """
        items, catalog = prepare(objects, copy=copy)
        if catalog is not None:
            self.world.catalog = catalog
        if self.world.ec2 is not None:
            self.world.ec2.adopt(items)
        with self.store.lock:
            fresh = [(rt, obj) for rt, obj in items
                     if self.store.get(rt, obj["metadata"].get("namespace") or "", obj["metadata"]["name"]) is None]
            if initial:
                return self.store.bulk_load(fresh)
            for rt, obj in fresh:
                self.store.create(rt, obj)
            return len(fresh)
