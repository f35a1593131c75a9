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
import time
import urllib.parse
import urllib.request
from pathlib import Path

from devstack.browser import Page, chromium, find_chromium
from workflows.summaries import WORK_VIEW  # docs/operations.md's saved view


def drain_list(page: Page, ui: str, namespace: str, node: str, out: Path) -> None:
    """The list filtered by NodeflowPhase="Draining", with nodeflow's search attributes as columns."""
    page.goto(f"{ui}/namespaces/{namespace}/workflows", wait_for="Workflow")
    page.set_list_columns(namespace)
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
    p.add_argument("--chromium", default=find_chromium() or "/usr/bin/chromium")
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
