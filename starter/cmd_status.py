"""`nodeflow status [NODE]`: in-flight terminations with phase, pods left, what blocks them (PDBs and
do-not-disrupt pods) or what they wait for (a DisruptionPolicy's drain.jobs Wait: "waiting for 2 Job pods, longest
running 14m"), age and deadline."""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from typing import Any

from starter.output import add_output_flag, print_output, render_table


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("status", help="show in-flight node terminations",
                              description="List running TerminationWorkflows (or one node's) with their progress.")
    p.add_argument("node", nargs="?", help="only this node")
    p.add_argument("--all", action="store_true", help="include finished terminations")
    from starter.status_watch import add_watch_flags
    from starter.temporal_flags import add_temporal_flags

    add_temporal_flags(p)
    add_output_flag(p)
    add_watch_flags(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.watch:
        from starter.status_watch import watch

        return watch(args)
    rows = asyncio.run(collect(args))
    print_output(rows, args.output, table=table)
    if args.node and not rows:
        _say_if_in_cluster(args)
    return 0


def _say_if_in_cluster(args: argparse.Namespace) -> None:
    """No termination for NODE: say whether the cluster (the resolved kubeconfig's) still has it."""
    import sys

    from starter.kubeconfig import resolve
    from starter.temporal import node_uid_from_cluster

    if node_uid_from_cluster(resolve(args.kubeconfig), args.node, args.context) is not None:
        print(f"node {args.node} is in the cluster and not being terminated; "
              f"`kubectl delete node {args.node} --wait=false` starts its termination", file=sys.stderr)


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
    from client.termination import termination_query
    from starter.output import CliError
    from starter.temporal import connect_from_args
    from workflows import search_attributes as sa
    from workflows.termination import TerminationWorkflow

    client = await connect_from_args(args)
    rows: list[dict[str, Any]] = []
    now = datetime.now(UTC)
    try:
        async for wf in client.list_workflows(termination_query(args.node, running_only=not args.all)):
            attrs = wf.typed_search_attributes
            row: dict[str, Any] = {
                "node": attrs.get(sa.NODE), "nodePool": attrs.get(sa.NODE_POOL), "reason": attrs.get(sa.REASON),
                "phase": attrs.get(sa.PHASE), "status": wf.status.name if wf.status else None,
                "workflowId": wf.id, "startedAt": wf.start_time.isoformat() if wf.start_time else None,
                "age": _age(wf.start_time, now), "deadline": None, "podsLeft": None, "blockingPDBs": [],
                "blocking": [], "pods": [], "waiting": None, "completionUntil": None,
            }
            if wf.status is not None and wf.status.name == "RUNNING":
                handle = client.get_workflow_handle_for(TerminationWorkflow.run, wf.id, run_id=wf.run_id)
                try:
                    p = await asyncio.wait_for(handle.query(TerminationWorkflow.progress), timeout=5)
                    row.update(phase=p.phase.value, deadline=p.deadline.isoformat() if p.deadline else None,
                               podsLeft=len(p.pods), blockingPDBs=p.blocking_pdbs, blocking=p.blocking, forced=p.forced,
                               pods=[{"pod": q.key, "tier": q.tier.value, "status": q.status,
                                      "blockingPDB": q.blocking_pdb,
                                      "startedAt": q.started_at.isoformat() if q.started_at else None}
                                     for q in p.pods])
                    row.update(_waiting(p, now))
                except Exception as exc:  # no worker answering: the search attributes still tell the phase
                    row["queryError"] = str(exc)
            rows.append(row)
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"listing terminations failed: {exc}") from exc
    rows.sort(key=lambda r: r.get("startedAt") or "")
    return rows


def _waiting(p: Any, now: datetime) -> dict[str, Any]:
    """drain.jobs Wait: what the drain leaves to finish, with "longest running" counted on this machine's clock."""
    from workflows.models import completion_summary

    until = p.completion_until
    waiting = completion_summary(p.pods, now, until) if p.waiting else None
    return {"waiting": waiting, "completionUntil": until.isoformat() if until else None}


def table(rows: list[dict[str, Any]]) -> str:
    from starter.status_watch import blocking_cell

    if not rows:
        return "No terminations in flight."
    return render_table(
        ["NODE", "NODEPOOL", "REASON", "PHASE", "PODS LEFT", "BLOCKING", "AGE", "DEADLINE"],
        [[r["node"], r["nodePool"], r["reason"], r["phase"], r["podsLeft"], blocking_cell(r),
          r["age"], r["deadline"]] for r in rows],
    )
