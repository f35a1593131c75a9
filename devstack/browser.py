"""A headless Chromium driven over the Chrome DevTools protocol: the Temporal Web UI's screenshots and the test
that reads its workflow list (tests/devstack/test_ui_list.py, scripts/ui_screenshots.py).

Debian's `chromium` package, no browser download and no Playwright: one websocket (websocket-client, already a
dependency of the kubernetes client) is all it takes to navigate, read the page's text and capture it.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import websocket

from devstack.processes import free_port

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# The list's columns as the UI's column picker stores them (localStorage, per namespace): nodeflow's four search
# attributes beside the id, so a row reads `general-01 Drifted general Draining` (docs/operations.md).
LIST_COLUMNS = ["Status", "NodeflowNode", "NodeflowReason", "NodeflowNodePool", "NodeflowPhase", "Workflow ID",
                "Type", "Start"]
COLUMNS_KEY = "namespace-workflow-table-columns"


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Page:
    """One browser tab over CDP: navigate, evaluate, wait for text, capture."""

    def __init__(self, ws_url: str) -> None:
        self._ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self._ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self._ids)
        self._ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def goto(self, url: str, wait_for: str, timeout: float = 20.0, attempts: int = 3) -> None:
        """Open `url` and wait until the page's text holds `wait_for` (the UI renders after its API calls; a
        list request that failed on a loaded machine shows an empty list, so the page is loaded again)."""
        for _ in range(attempts):
            self.call("Page.navigate", url=url)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if wait_for.lower() in self.text().lower():
                    time.sleep(1.5)  # let the rest of the page's requests land
                    return
                time.sleep(0.5)
        text = self.text()
        raise TimeoutError(f"{url}: {wait_for!r} never appeared; the page says: {' '.join(text.split())[-600:]}")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def set_list_columns(self, namespace: str, columns: list[str] = LIST_COLUMNS) -> None:
        """What a user who added the columns with the UI's picker has; takes effect at the next navigation."""
        value = json.dumps({namespace: [{"label": c} for c in columns]})
        self.evaluate(f"localStorage.setItem({json.dumps(COLUMNS_KEY)}, {json.dumps(value)})")

    def screenshot(self, path: Path, width: int, height: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        time.sleep(1.0)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._ws.close()


@contextlib.contextmanager
def chromium(binary: str) -> Iterator[Page]:
    """A fresh headless Chromium (new empty profile) with the DevTools port open; one page."""
    with tempfile.TemporaryDirectory(prefix="nf-chromium-", ignore_cleanup_errors=True) as profile:
        port = free_port()
        proc = subprocess.Popen([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                 f"--remote-debugging-port={port}", "--window-size=1600,1000", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        page: Page | None = None
        try:
            page = Page(_page_ws_url(port))
            yield page
        finally:
            if page is not None:
                page.close()
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _page_ws_url(port: int, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as resp:
                pages = [t for t in json.load(resp) if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
        time.sleep(0.3)
    raise TimeoutError("Chromium's DevTools endpoint did not come up")
