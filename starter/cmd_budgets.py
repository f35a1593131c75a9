"""`nodeflow budgets -f SNAPSHOT`: how many nodes each NodePool may disrupt now, per reason, and when that changes."""

from __future__ import annotations

import argparse
import math
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from api.duration import format_duration
from starter.live_cluster import load_live_snapshot
from starter.output import CliError, add_output_flag, print_output, render_table
from starter.snapshot_source import (
    add_source_flags,
    live_kubeconfig,
    parse_at,
    require_pools_or_nodes,
    snapshot_kinds,
)

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "budgets",
        help="disruption budgets per NodePool and reason: allowed now, active budgets, next window change",
        description="Evaluate the NodePools' disruption budgets on a cluster snapshot, as Karpenter v1 does.",
    )
    add_source_flags(p, "cluster snapshot: YAML stream or kind: List of NodePools, NodeClaims, Nodes ('-': stdin)",
                     "read the live cluster of this kubeconfig instead",
                     "evaluate at this time, e.g. 2026-11-23T09:00:00Z (default: now)")
    add_output_flag(p)
    p.set_defaults(func=run)


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe_budget(index: int, budget: Any) -> str:
    """`#1 0 nodes [Drifted] 0 9 * * 1-5 America/New_York for 8h`: one budget, short."""
    text = f"#{index} {budget.nodes}"
    if budget.reasons is not None:
        text += f" [{','.join(budget.reasons) or 'no reason'}]"
    if budget.schedule is not None:
        text += f" {budget.schedule} {budget.time_zone or 'UTC'} for {budget.duration}"
    return text


def budget_details(pool: Any, reason: str, at: datetime) -> tuple[str, str]:
    """(active budgets for the reason, next window change) for the table."""
    from api.budgets import BudgetError, applies_to, is_active, next_transition

    active: list[str] = []
    changes: list[tuple[datetime, str]] = []
    for i, budget in enumerate(pool.budgets):
        if not applies_to(budget, reason):
            continue
        try:
            if is_active(budget, at):
                active.append(describe_budget(i, budget))
            change = next_transition(budget, at)
        except BudgetError:
            continue
        if change is not None:
            wait = format_duration(timedelta(minutes=math.ceil((change.at - at).total_seconds() / 60)))
            verb = "opens" if change.opens else "closes"
            changes.append((change.at, f"#{i} {verb} {_iso(change.at)} (in {wait})"))
    nxt = min(changes)[1] if changes else "-"
    return ("; ".join(active) or "none (no limit)"), nxt


def run(args: argparse.Namespace) -> int:
    from api.budgets import ALL_REASONS, compute_budget_rows, shown_reasons
    from api.snapshot import SnapshotError, load_snapshot

    at = parse_at(args.at)
    kubeconfig = live_kubeconfig(args)
    if kubeconfig:
        snapshot, _ = load_live_snapshot(kubeconfig, args.context)  # tainted nodes count as disrupting
    else:
        try:
            snapshot = load_snapshot(args.filename)
        except SnapshotError as exc:
            raise CliError(str(exc)) from None
    for warning in snapshot.warnings:
        print(f"warning: {snapshot.source}: {warning}", file=sys.stderr)
    require_pools_or_nodes(snapshot_kinds(snapshot), snapshot.source)
    if not snapshot.node_pools:  # Nodes without a NodePool: nothing has budgets
        raise CliError(f"{snapshot.source}: no NodePool (karpenter.sh/v1) found")
    shown = shown_reasons(snapshot.node_pools)  # Unhealthy only where a budget names it (docs/contracts.md)
    rows = [r for r in compute_budget_rows(snapshot.node_pools, snapshot.nodes, snapshot.node_claims, at, ALL_REASONS)
            if r.reason in shown.get(r.node_pool, ())]
    data = [row.model_dump(mode="json", by_alias=True) for row in rows]

    def table(_: Any) -> str:
        body = []
        errors: dict[str, list[str]] = {}
        for row in rows:
            pool = snapshot.node_pool(row.node_pool)
            active, nxt = budget_details(pool, row.reason, at) if pool else ("", "-")
            if row.errors:
                errors[row.node_pool] = row.errors
                active = "INVALID BUDGET: 0 for every reason"
            body.append([row.node_pool, row.reason, row.allowed, row.total, row.disrupting,
                         "-" if row.limit is None else row.limit, active, nxt])
        out = f"Budgets at {_iso(at)}\n\n" + render_table(
            ["NODEPOOL", "REASON", "ALLOWED", "NODES", "DISRUPTING", "LIMIT", "ACTIVE BUDGETS", "NEXT CHANGE"], body)
        for pool_name, errs in errors.items():
            out += f"\nNodePool {pool_name}: invalid budgets block every voluntary disruption:\n"
            out += "".join(f"  {e}\n" for e in errs)
        return out

    print_output(data, args.output, table=table)
    return 0
