"""Screenshots of the Temporal Web UI for docs/operations.md, driven over the Chrome DevTools protocol.

Runs Debian's headless Chromium against a running demo (scripts/ui-screenshots.sh starts one) and saves PNGs:
the workflow list filtered by `NodeflowPhase="Draining"` with nodeflow's search attributes as columns, and one
drain's workflow page (its Summary & Details card). The list's columns are set the way the UI's own column
picker stores them (localStorage), so the picture shows what a user who added the columns sees.

Usage: .venv/bin/python scripts/ui_screenshots.py --ui http://127.0.0.1:8233 --out docs/images
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import websocket  # websocket-client, a dependency of the kubernetes client

from workflows.summaries import WORK_VIEW  # docs/operations.md's saved view

LIST_COLUMNS = ["Status", "NodeflowNode", "NodeflowReason", "NodeflowNodePool", "NodeflowPhase", "Workflow ID",
                "Type", "Start"]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


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

    def screenshot(self, path: Path, width: int, height: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        time.sleep(1.0)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        print(f"wrote {path} ({path.stat().st_size} bytes)")


@contextlib.contextmanager
def chromium(binary: str) -> Iterator[Page]:
    """A fresh headless Chromium (new empty profile) with the DevTools port open; one page."""
    with tempfile.TemporaryDirectory(prefix="nf-chromium-", ignore_cleanup_errors=True) as profile:
        port = _free_port()
        proc = subprocess.Popen([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                 f"--remote-debugging-port={port}", "--window-size=1600,1000", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            yield Page(_page_ws_url(port))
        finally:
            proc.terminate()
            proc.wait(timeout=20)


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def drain_list(page: Page, ui: str, namespace: str, node: str, out: Path) -> None:
    """The list filtered by NodeflowPhase="Draining", with nodeflow's search attributes as columns."""
    page.goto(f"{ui}/namespaces/{namespace}/workflows", wait_for="Workflow")
    columns = {namespace: [{"label": c} for c in LIST_COLUMNS]}
    page.evaluate(f"localStorage.setItem('namespace-workflow-table-columns', {json.dumps(json.dumps(columns))})")
    query = urllib.parse.quote('NodeflowPhase="Draining"')
    url = f"{ui}/namespaces/{namespace}/workflows?query={query}"
    try:  # better with company: the demo's drift rollout drains a few nodes in its first minutes
        page.goto(url, wait_for="Drifted", timeout=10.0, attempts=4)
    except TimeoutError:
        page.goto(url, wait_for=node)
    page.screenshot(out / "ui-draining-list.png", 1800, 600)


def drain_page(page: Page, ui: str, namespace: str, workflow_id: str, node: str, out: Path) -> None:
    """One drain's workflow page, its User Metadata tab: the static summary and details (markdown) and the
    current details the workflow keeps up to date (pods left, the PodDisruptionBudget that blocks them)."""
    page.goto(f"{ui}/namespaces/{namespace}/workflows/{urllib.parse.quote(workflow_id)}", wait_for=f"drain {node}")
    run_page = page.evaluate("location.pathname").rsplit("/", 1)[0]  # .../<workflow id>/<run id>/history
    page.goto(f"{ui}{run_page}/user-metadata", wait_for="Current Details")
    time.sleep(2.0)  # the markdown renders in frames after the text
    page.screenshot(out / "ui-drain-page.png", 1600, 820)


async def count_rows(address: str, namespace: str) -> None:
    """Check docs/operations.md's saved-view query on this server: how many rows it keeps of all."""
    from temporalio.client import Client

    client = await Client.connect(address, namespace=namespace)
    total = (await client.count_workflows()).count
    kept = (await client.count_workflows(WORK_VIEW)).count
    passes = (await client.count_workflows('WorkflowType = "PlannerWorkflow"')).count
    print(f"{WORK_VIEW}: {kept} of {total} workflows ({passes} planner passes hidden)")


def work_view(page: Page, ui: str, namespace: str, out: Path) -> None:
    """The saved view: the list without scheduled passes."""
    page.goto(f"{ui}/namespaces/{namespace}/workflows?query={urllib.parse.quote(WORK_VIEW)}", wait_for="Running")
    page.screenshot(out / "ui-work-view.png", 1800, 900)


async def find_drain(address: str, namespace: str, node: str, timeout: float = 90.0) -> str:
    """The id of the node's TerminationWorkflow once it reports NodeflowPhase Draining."""
    from temporalio.client import Client

    client = await Client.connect(address, namespace=namespace)
    query = f"NodeflowNode = '{node}' AND NodeflowPhase = 'Draining' AND ExecutionStatus = 'Running'"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        async for wf in client.list_workflows(query, limit=1):
            return wf.id
        await asyncio.sleep(1.0)
    raise TimeoutError(f"no drain of {node} in phase Draining after {timeout:.0f}s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ui", default="http://127.0.0.1:8233", help="the Temporal Web UI")
    p.add_argument("--namespace", default="default")
    p.add_argument("--temporal", default="127.0.0.1:7233", help="the Temporal frontend, to find the drain")
    p.add_argument("--node", required=True, help="the node whose drain to show (NodeflowPhase Draining)")
    p.add_argument("--out", type=Path, default=Path("docs/images"))
    p.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    workflow_id = asyncio.run(find_drain(args.temporal, args.namespace, args.node))
    with chromium(args.chromium) as page:
        drain_list(page, args.ui.rstrip("/"), args.namespace, args.node, args.out)
        drain_page(page, args.ui.rstrip("/"), args.namespace, workflow_id, args.node, args.out)
        work_view(page, args.ui.rstrip("/"), args.namespace, args.out)
    asyncio.run(count_rows(args.temporal, args.namespace))


if __name__ == "__main__":
    main()
