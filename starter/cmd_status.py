"""`nodeflow status [NODE]`: in-flight terminations with phase, pods left, what blocks them (PDBs and
do-not-disrupt pods) or what they wait for (a DisruptionPolicy's drain.jobs Wait: "waiting for 2 Job pods, longest
running 14m"), age and deadline; and in-flight disruptions with phase, method and reason, nodes, replacements and
their state, and what each waits for. With NODE it also says what to do next, by the node's state
(starter/status_advice.py)."""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from functools import partial
from typing import Any

from starter.kubeconfig import resolve
from starter.output import CliError, add_output_flag, print_output
from starter.status_watch import add_watch_flags, table_lines, watch
from starter.temporal_flags import add_temporal_flags

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("status", help="show in-flight node terminations and disruptions",
                              description="List running TerminationWorkflows and DisruptionWorkflows (or one "
                                          "node's) with their progress; with NODE, what to do next.")
    p.add_argument("node", nargs="?", help="only this node")
    p.add_argument("--all", action="store_true", help="include finished terminations and disruptions")
    add_temporal_flags(p)
    add_output_flag(p)
    add_watch_flags(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    import sys

    if args.watch:
        return watch(args, collect)
    rows, notes = asyncio.run(_rows_and_advice(args))
    print_output(rows, args.output, table=lambda rs: table(rs, finished=args.all))
    for note in notes:
        print(note, file=sys.stderr)
    return 0


async def _rows_and_advice(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    from starter.temporal import connect_from_args

    args.temporal_client = await connect_from_args(args)  # one connection for the rows and the advice
    rows = await collect(args)
    return rows, (await _advice(args, rows) if args.node else [])


async def _advice(args: argparse.Namespace, rows: list[dict[str, Any]]) -> list[str]:
    """What to do about NODE: by the running workflow's state; else the latest finished one's; else the cluster's."""
    from starter.status_advice import ClusterNode, NodeState, advice, cluster_node, idle_state, running_state

    state = running_state(rows)
    if state is not None:
        kind = "Termination" if state in (NodeState.TERMINATING, NodeState.TERMINATING_INSTANCE) else "Disruption"
        row = next(r for r in rows if r.get("status") == "RUNNING" and r.get("kind") == kind)
        return [a for a in (advice(args.node, state, row),) if a]
    finished = await latest_finished(args.temporal_client, args.node)
    cluster = await asyncio.to_thread(cluster_node, resolve(args.kubeconfig), args.node, args.context)
    state = idle_state(finished, cluster)
    notes = [advice(args.node, state, finished, all_shown=args.all)]
    if state == NodeState.FINISHED and cluster == ClusterNode.PRESENT:  # e.g. a cancelled termination
        notes.append(advice(args.node, NodeState.IN_CLUSTER))
    return [n for n in notes if n]


async def latest_finished(client: Any, node: str) -> dict[str, Any] | None:
    """The most recently closed termination or disruption of NODE (a disruption by its first node), or None."""
    from client.disruption_status import disruption_query
    from client.termination import termination_query
    from contracts import search_attributes as sa

    closed = "ExecutionStatus != 'Running'"
    found = []
    for kind, query in (("Termination", termination_query(node, running_only=False)),
                        ("Disruption", disruption_query(node, running_only=False, first_node_only=True))):
        async for wf in client.list_workflows(f"{query} AND {closed}", limit=1):
            found.append({"kind": kind, "workflowId": wf.id, "status": wf.status.name if wf.status else None,
                          "phase": wf.typed_search_attributes.get(sa.PHASE),
                          "closedAt": wf.close_time.isoformat() if wf.close_time else None})
    return max(found, key=lambda r: r["closedAt"] or "", default=None)


def _age(since: datetime | None, now: datetime) -> str | None:
    if since is None:
        return None
    secs = int((now - since).total_seconds())
    if secs < 120:
        return f"{secs}s"
    if secs < 7200:
        return f"{secs // 60}m"
    return f"{secs // 3600}h{(secs % 3600) // 60}m"


async def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Terminations (oldest first), then disruptions; the running ones' progress queried all at once, so workflows
    no worker answers cost one query timeout in all, not one each."""
    from client.pollers import query_where_polled
    from client.termination import termination_query
    from contracts import search_attributes as sa
    from starter.temporal import connect_from_args

    client = await connect_from_args(args)
    rows: list[dict[str, Any]] = []
    queries: list[tuple[dict[str, Any], str | None, str]] = []
    now = datetime.now(UTC)
    try:
        async for wf in client.list_workflows(termination_query(args.node, running_only=not args.all)):
            attrs = wf.typed_search_attributes
            row: dict[str, Any] = {
                "kind": "Termination", "node": attrs.get(sa.NODE), "nodePool": attrs.get(sa.NODE_POOL),
                "reason": attrs.get(sa.REASON),
                "phase": attrs.get(sa.PHASE), "status": wf.status.name if wf.status else None,
                "workflowId": wf.id, "startedAt": wf.start_time.isoformat() if wf.start_time else None,
                "age": _age(wf.start_time, now), "deadline": None, "podsLeft": None, "blockingPDBs": [],
                "blocking": [], "pods": [], "waiting": None, "completionUntil": None,
            }
            if wf.status is not None and wf.status.name == "RUNNING":
                queries.append((row, wf.run_id, wf.task_queue))
            rows.append(row)
        await query_where_polled(client, ((queue, partial(_progress, client, row, run_id, now),
                                           partial(row.__setitem__, "queryError")) for row, run_id, queue in queries))
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"listing terminations failed: {exc}") from exc
    rows.sort(key=lambda r: r.get("startedAt") or "")
    return rows + await _disruptions(client, args, now)


async def _progress(client: Any, row: dict[str, Any], run_id: str | None, now: datetime) -> None:
    """Fill a running termination's row from its `progress` query."""
    from workflows.termination import TerminationWorkflow

    handle = client.get_workflow_handle_for(TerminationWorkflow.run, row["workflowId"], run_id=run_id)
    try:
        p = await asyncio.wait_for(handle.query(TerminationWorkflow.progress), timeout=5)
    except Exception as exc:  # no worker answering: the search attributes still tell the phase
        row["queryError"] = str(exc)
        return
    row.update(phase=p.phase.value, deadline=p.deadline.isoformat() if p.deadline else None,
               podsLeft=len(p.pods), blockingPDBs=p.blocking_pdbs, blocking=p.blocking, forced=p.forced,
               pods=[{"pod": q.key, "tier": q.tier.value, "status": q.status, "blockingPDB": q.blocking_pdb,
                      "startedAt": q.started_at.isoformat() if q.started_at else None} for q in p.pods])
    row.update(_waiting(p, now))


async def _disruptions(client: Any, args: argparse.Namespace, now: datetime) -> list[dict[str, Any]]:
    from client.disruption_status import list_disruptions

    try:
        found = await list_disruptions(client, args.node, running_only=not args.all)
    except Exception as exc:
        raise CliError(f"listing disruptions failed: {exc}") from exc
    rows = [{**d.model_dump(by_alias=True, mode="json"), "age": _age(d.started_at, now)} for d in found]
    return sorted(rows, key=lambda r: r.get("startedAt") or "")


def _waiting(p: Any, now: datetime) -> dict[str, Any]:
    """drain.jobs Wait: what the drain leaves to finish, with "longest running" counted on this machine's clock."""
    from contracts.termination import completion_summary

    until = p.completion_until
    waiting = completion_summary(p.pods, now, until) if p.waiting else None
    return {"waiting": waiting, "completionUntil": until.isoformat() if until else None}


def table(rows: list[dict[str, Any]], finished: bool = False) -> str:
    """The terminations' table, then the disruptions' (each only when it has rows)."""
    if not rows:
        return "No terminations or disruptions found." if finished else \
            "No terminations or disruptions in flight (--all includes finished ones)."
    return "\n".join(table_lines(rows)) + "\n"
