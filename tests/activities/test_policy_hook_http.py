"""The DisruptionPolicy hooks' POST (activities/policy_hooks.py `_post_json`, the standard library's client): an
answer is a status whatever it is, no answer is UNREACHABLE, redirects are followed, only http(s) URLs are opened
and the environment's proxy is not used."""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support.ports import free_port

from activities import policy_hooks
from activities.policy_hooks import UNREACHABLE, _post_json


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A webhook on loopback: /ok answers 200, /refuse 500, /moved a 302 to /ok; it keeps each POST's JSON body."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def do_POST(self) -> None:
            seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            routes = {"/ok": (200, None), "/refuse": (500, None), "/moved": (302, {"Location": "/ok"})}
            self._answer(*routes.get(self.path, (404, None)))

        def do_GET(self) -> None:  # where a followed redirect lands
            self._answer(200 if self.path == "/ok" else 404)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_an_answer_is_its_status_and_the_body_arrives(hook: tuple[str, list[dict[str, Any]]]) -> None:
    base, seen = hook
    assert _post_json(f"{base}/ok", {"node": "n1"}) == 200
    assert _post_json(f"{base}/refuse", {"node": "n2"}) == 500  # refused: an answer, not an outage
    assert _post_json(f"{base}/moved", {"node": "n3"}) == 200
    assert seen == [{"node": "n1"}, {"node": "n2"}, {"node": "n3"}]


def test_no_answer_is_unreachable() -> None:
    with pytest.raises(UNREACHABLE):
        _post_json(f"http://127.0.0.1:{free_port()}/hook", {})  # nothing listens there


def test_only_http_urls_are_opened(tmp_path: Any) -> None:
    secret = tmp_path / "secret"
    secret.write_text("x")
    with pytest.raises(UNREACHABLE):
        _post_json(secret.as_uri(), {})


def test_the_environments_proxy_is_not_used(hook: tuple[str, list[dict[str, Any]]],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The module loaded with a proxy in the environment (urllib reads it when an opener is built) still posts
    directly, as aiohttp's client did (it ignores the environment unless told otherwise)."""
    base, _ = hook
    for name in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{free_port()}")  # a proxy that is not there
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    try:
        reloaded = importlib.reload(policy_hooks)
        assert reloaded._post_json(f"{base}/ok", {}) == 200
    finally:
        monkeypatch.undo()
        importlib.reload(policy_hooks)
