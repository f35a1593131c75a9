"""External servers nodeflow runs for the demo, benchmarks and chaos tests: the Temporal dev server
and moto_server. Each can be stopped and restarted on the same port and state (the chaos suite does).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from contracts.search_attributes import ALL as SEARCH_ATTRIBUTES
from devstack.binaries import find_binary


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ProcessExited(RuntimeError):
    """The server we started exited before it was ready (a port it wanted was taken, a bad flag, a crash)."""


def _listening_inodes(port: int) -> set[str] | None:
    """The socket inodes listening on `port` (Linux's /proc/net/tcp and tcp6), None where there is no /proc."""
    inodes: set[str] = set()
    tables = [t for t in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")) if t.exists()]
    if not tables:
        return None
    for table in tables:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(fields[9])
    return inodes


def _tree_sockets(pid: int) -> set[str] | None:
    """The socket inodes open in process `pid` and its descendants (servers may fork), None where /proc cannot
    tell."""
    if not Path("/proc/self/fd").is_dir():
        return None
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    tree, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    found: set[str] = set()
    for member in tree:
        try:
            for fd in Path(f"/proc/{member}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    found.add(target[8:-1])
        except OSError:
            continue
    return found


def _listens(port: int, proc: subprocess.Popen | None) -> bool:
    """Something listens on `port` and, with `proc`, it is `proc`'s: a port chosen free and then taken by another
    process (the suite's four workers start servers all the time) must not pass for our server. /proc is read only
    once a connection is answered (a read of every socket and process costs milliseconds; polls are 50 ms)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            pass
    except OSError:
        return False
    if proc is None:
        return True
    listening, mine = _listening_inodes(port), _tree_sockets(proc.pid)
    return listening is None or mine is None or bool(listening & mine)


def wait_for_port(port: int, timeout: float = 90.0, proc: subprocess.Popen | None = None) -> None:
    """Wait until a server we started listens. A server that exits fails at once, so the bound only matters for one
    that hangs: it is long because the test suite's four workers start their servers at once on two cores (moto
    once took over 20 s there, at load 19)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ProcessExited(f"process exited with code {proc.returncode} before listening on :{port}")
        if _listens(port, proc):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout:.0f}s")


class ManagedProcess:
    """A child process bound to a fixed loopback port, restartable on the same port."""

    name = "process"

    def __init__(self, port: int | None = None, log_path: Path | None = None) -> None:
        self.port = port or free_port()
        self.chosen_ports = port is None  # ours to choose again if another process takes one first
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.started = False

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 90.0, attempts: int = 3) -> None:
        """Start and wait until ready. A first start on ports chosen here that exits before it is ready (a port
        taken between our choice and its bind) tries fresh ports; a restart keeps its ports, as it promises."""
        for attempt in range(attempts):
            log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
            try:
                self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True, env=self.environment())
            finally:  # the child holds its own copy; this one would leak, once per start and attempt
                if log is not subprocess.DEVNULL:
                    log.close()
            try:
                self.wait_ready(timeout)
            except ProcessExited:
                if self.started or not self.chosen_ports or attempt == attempts - 1:
                    raise
                self.choose_ports()
                continue
            self.started = True
            return

    def wait_ready(self, timeout: float) -> None:
        wait_for_port(self.port, timeout, self.proc)

    def choose_ports(self) -> None:
        self.port = free_port()

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def stop(self, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL the whole process group: no shutdown hook runs, nothing is flushed (a crash, not a stop)."""
        self.stop(kill=True)

    def restart(self, kill: bool = False) -> None:
        """Stop (SIGTERM, or SIGKILL with kill=True) and start again on the same port and state."""
        self.stop(kill=kill)
        self.start()

    def __enter__(self) -> ManagedProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TemporalDevServer(ManagedProcess):
    """`temporal server start-dev` with nodeflow's search attributes and an optional Web UI.

    With a db file the state survives a restart, which is what a durability demo needs; a SIGKILL (`kill()`,
    `restart(kill=True)`) leaves a SQLite file the next start opens as it is (the chaos suite does this).
    """

    name = "temporal"

    def __init__(self, port: int | None = None, ui_port: int | None = None, db_path: Path | None = None,
                 headless: bool = False, log_path: Path | None = None) -> None:
        super().__init__(port, log_path)
        self.ui_port = None if headless else (ui_port or free_port())
        self.chosen_ports = self.chosen_ports and (headless or ui_port is None)
        self.db_path = db_path

    def wait_ready(self, timeout: float) -> None:
        """The frontend listens, and the Web UI, which the CLI starts last and exits on when its port is taken."""
        super().wait_ready(timeout)
        if self.ui_port:
            wait_for_port(self.ui_port, timeout, self.proc)

    def choose_ports(self) -> None:
        super().choose_ports()
        if self.ui_port:
            self.ui_port = free_port()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str | None:
        return f"http://127.0.0.1:{self.ui_port}" if self.ui_port else None

    def command(self) -> list[str]:
        cmd = [find_binary("temporal") or "temporal", "server", "start-dev", "--ip", "127.0.0.1",
               "--port", str(self.port), "--log-level", "warn", "--log-format", "json"]
        cmd += ["--ui-port", str(self.ui_port)] if self.ui_port else ["--headless"]
        if self.db_path:
            cmd += ["--db-filename", str(self.db_path)]
        for key in SEARCH_ATTRIBUTES:
            cmd += ["--search-attribute", f"{key.name}=Keyword"]
        return cmd


class MotoServer(ManagedProcess):
    """moto in server mode (EC2 + SQS) on loopback. State is in memory: a restart forgets it.

    `indexed_tags` (the default) runs it with `devstack.moto_indexed`, which answers a resource's tags without
    moto's scan of every tag, so that hundreds of instances measure nodeflow rather than moto, and also serves a
    varying spot price history and the Pricing API (GetProducts) on the same endpoint. `indexed_tags=False`
    runs plain `moto_server`, without those.
    """

    name = "moto"

    def __init__(self, port: int | None = None, log_path: Path | None = None, indexed_tags: bool = True) -> None:
        super().__init__(port, log_path)
        self.indexed_tags = indexed_tags

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        args = ["-H", "127.0.0.1", "-p", str(self.port)]
        if self.indexed_tags:
            return [sys.executable, "-m", "devstack.moto_indexed", *args]
        return [find_binary("moto_server") or "moto_server", *args]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("AWS_ACCESS_KEY_ID", "testing")
        env.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
        env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        return env
