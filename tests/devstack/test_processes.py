"""The servers tests start are ready only when the port is theirs: a port chosen free and taken by another process
before the server binds it (the suite's four workers start servers all the time) must neither pass for the server
nor fail the test that wanted one."""

from __future__ import annotations

import socket
import sys
import urllib.request
from collections.abc import Iterator

import pytest

from devstack.processes import ManagedProcess, ProcessExited, free_port, wait_for_port


class _HttpServer(ManagedProcess):
    name = "http"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(self.port)]


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another process (here: this one) listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def _answers(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
        return r.status == 200


def test_a_listener_that_is_not_the_server_does_not_make_it_ready(taken: int) -> None:
    server = _HttpServer(port=free_port())
    server.start()
    try:
        with pytest.raises(TimeoutError):  # our process lives, but what listens on `taken` is not it
            wait_for_port(taken, timeout=1.0, proc=server.proc)
        wait_for_port(server.port, timeout=5.0, proc=server.proc)
    finally:
        server.stop()


def test_a_first_start_whose_chosen_port_was_taken_tries_a_fresh_one(taken: int) -> None:
    server = _HttpServer()
    server.port = taken  # as if another process bound it between free_port() and the server's bind
    server.start(timeout=30)
    try:
        assert server.port != taken and _answers(server.port)
    finally:
        server.stop()


def test_a_given_port_or_a_restart_keeps_its_port(taken: int) -> None:
    with pytest.raises(ProcessExited):
        _HttpServer(port=taken).start(timeout=30)
    server = _HttpServer()
    server.start(timeout=30)
    port = server.port
    server.stop()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen()
            with pytest.raises(ProcessExited):  # a restart promises the same port (the chaos suite relies on it)
                server.start(timeout=30)
        assert server.port == port
    finally:
        server.stop()
