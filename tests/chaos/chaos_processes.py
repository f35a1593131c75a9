"""The chaos suite's processes: the worker replicas (`python worker.py`, SIGKILLed and restarted, supervised as a
Deployment's kubelet would), and a counting proxy in front of moto_server that sees every EC2 call the workers
make (so a second TerminateInstances of one instance, or a second RunInstances or CreateFleet of one ClientToken,
is seen even when EC2's idempotency would hide it in the end state).
"""

from __future__ import annotations

import asyncio
import http.client
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from support.moto_fixtures import AWS_TEST_ENV

ROOT = Path(__file__).resolve().parents[2]


class Ec2CountingProxy:
    """HTTP proxy to moto_server counting, per instance, TerminateInstances calls EC2 accepted (2xx), and per
    ClientToken, RunInstances and CreateFleet calls; the workers talk to EC2 only through it."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.terminations: Counter[str] = Counter()
        self.run_instances: Counter[str] = Counter()
        self.create_fleet: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                proxy.forward(self)

            def do_GET(self) -> None:
                proxy.forward(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="ec2-proxy", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def forward(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        form = parse_qs(body.decode("utf-8", "replace")) if body else {}
        action = (form.get("Action") or [""])[0]
        headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "connection")}
        try:
            conn = http.client.HTTPConnection(*self.upstream, timeout=60)
            conn.request(h.command, h.path, body=body, headers=headers)
            resp = conn.getresponse()
            data, status, out_headers = resp.read(), resp.status, resp.getheaders()
            conn.close()
        except OSError as exc:  # moto down: what a client sees from a dead endpoint
            data, status, out_headers = str(exc).encode(), 502, []
        if 200 <= status < 300:
            with self._lock:
                self.calls[action] += 1
                if action == "TerminateInstances":
                    for key, values in form.items():
                        if key.startswith("InstanceId."):
                            self.terminations.update(values)
                elif action == "RunInstances":
                    self.run_instances[(form.get("ClientToken") or [""])[0]] += 1
                elif action == "CreateFleet":
                    self.create_fleet[(form.get("ClientToken") or [""])[0]] += 1
        h.send_response(status)
        for k, v in out_headers:
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(data)


class WorkerProcess:
    """One replica: `python worker.py` in a subprocess (worker + deletion watcher + schedule upkeep)."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name, self.cmd, self.env, self.log_dir = name, cmd, env, log_dir
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.kills = 0
        self.wanted = False  # the supervisor restarts a wanted replica that exited by itself
        self.crashes: list[str] = []  # exits nobody asked for: "<log file> rc=<code>"

    @property
    def log(self) -> Path:
        return self.log_dir / f"worker-{self.name}-{self.starts}.log"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.starts += 1
        self.wanted = True
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=log)

    def kill(self) -> bool:
        """SIGKILL (no shutdown hook runs, in-flight activities just die); False when it had already exited."""
        self.wanted = False
        if not self.running():
            return False
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)
        self.kills += 1
        return True

    def stop(self) -> None:
        self.wanted = False
        if self.running():
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Replicas:
    """The Deployment: replicas of the worker, a lock so scripted kills do not interleave, and a supervisor
    that restarts a replica which exited on its own (counted as a crash: it is reported, with its log)."""

    def __init__(self, names: list[str], address: str, kubeconfig: str, ec2_endpoint: str, task_queue: str,
                 ami_id: str, log_dir: Path, planner_seconds: float) -> None:
        # the bundled catalog: the chaos faults hit launches and terminations, never instance discovery, and each of
        # a seed's ~23 starts rediscovered 1,366 types (about 6 s of worker and stand-in CPU), a quarter of the
        # seed's CPU (172 -> 132 CPU-s for seed 7); tests/activities/test_instance_types_discovery.py tests
        # discovery's failures
        cmd = [sys.executable, str(ROOT / "worker.py"), "--address", address, "--kubeconfig", kubeconfig,
               "--ec2-endpoint", ec2_endpoint, "--task-queue", task_queue, "--resync-seconds", "1",
               "--ami-id", ami_id, "--log-level", "WARNING", "--no-instance-type-discovery"]
        env = dict(os.environ, PYTHONPATH=str(ROOT), NODEFLOW_PLANNER_SECONDS=str(planner_seconds), **AWS_TEST_ENV)
        self.all = {n: WorkerProcess(n, cmd, env, log_dir) for n in names}
        self.lock = asyncio.Lock()
        self._supervising = True

    def __getitem__(self, name: str) -> WorkerProcess:
        return self.all[name]

    def start_all(self) -> None:
        for w in self.all.values():
            w.start()

    def kill_all(self) -> int:
        return sum(w.kill() for w in self.all.values())

    def kills(self) -> int:
        return sum(w.kills for w in self.all.values())

    def crashes(self) -> list[str]:
        return [c for w in self.all.values() for c in w.crashes]

    async def supervise(self) -> None:
        while self._supervising:
            for w in self.all.values():
                if w.wanted and w.proc is not None and w.proc.poll() is not None and not self.lock.locked():
                    w.crashes.append(f"{w.log.name} rc={w.proc.returncode} at {time.strftime('%H:%M:%S')}")
                    await asyncio.sleep(1.0)  # a kubelet's restart back-off, shortened
                    if w.wanted and not w.running():
                        w.start()
            await asyncio.sleep(0.5)

    def stop(self) -> None:
        self._supervising = False
        for w in self.all.values():
            w.stop()
