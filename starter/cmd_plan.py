"""`nodeflow plan`: the dry run of the planner on a snapshot — what it would disrupt, why, and what it blocks."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from api.budgets import shown_reasons
from api.duration import DurationError, parse_duration
from starter.live_cluster import load_catalog_arg, load_live_snapshot
from starter.output import CliError, add_output_flag, print_output, render_table
from starter.plan_buffers import render_buffers
from starter.plan_limits import render_cost_limits, render_expiry
from starter.plan_spot import render_spot_fallbacks, render_zone_balance
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
        "plan", help="dry run: the commands the planner would start for a cluster snapshot",
        description="Run the planner's decision code on a snapshot (no side effects) and explain the result.")
    add_source_flags(p, "snapshot YAML (multi-document or kind: List); '-' reads stdin",
                     "plan against the live cluster of this kubeconfig", "evaluate at this time (default: now)")
    p.add_argument("--until-stable", action="store_true",
                   help="apply each pass's commands to a copy of the snapshot until nothing changes")
    p.add_argument("--catalog", metavar="FILE", help="InstanceTypeCatalog YAML replacing the default catalog")
    p.add_argument("--optimize", action="store_true",
                   help="optimizing consolidation (CP-SAT) for every NodePool, as the annotation "
                        "nodeflow.dev/consolidation-mode: optimize does for one (needs the solver extra)")
    p.add_argument("--node-repair-toleration", metavar="DURATION", default="30m",
                   help="node repair: how long Ready False/Unknown is tolerated, as the worker's flag (default 30m)")
    p.add_argument("--legacy-node-repair", action="store_true",
                   help="node repair as the worker's flag of that name: forceful, no budget, no replacement first")
    p.add_argument("--default-topology-spread", metavar="none|system|FILE", default="none",
                   help="cluster-default topology spread for pods without their own, as the worker's flag: none "
                        "(default), system (kube-scheduler's built-in defaults) or a YAML/JSON file")
    p.add_argument("--min-values-policy", choices=["Strict", "BestEffort"], default="Strict",
                   help="as the worker's flag: BestEffort plans a new node whose types cannot meet minValues")
    p.add_argument("--fill-policy", choices=["CostAware", "Greedy"], default="CostAware",
                   help="as the worker's flag: Greedy fills a new node while any type fits, as Karpenter")
    p.add_argument("--address", default=None,
                   help="Temporal host:port whose planner schedule says whether `nodeflow pause` holds every command "
                        "(env NODEFLOW_TEMPORAL_ADDRESS; read by default with --kubeconfig)")
    p.add_argument("--namespace", default=None, help="Temporal namespace (env NODEFLOW_TEMPORAL_NAMESPACE)")
    p.add_argument("--api-key", default=None, help="Temporal Cloud API key (env NODEFLOW_TEMPORAL_API_KEY)")
    p.add_argument("--schedule-id", default=None, help="planner schedule id (default nodeflow-planner)")
    add_output_flag(p)
    p.set_defaults(func=handle)


def load_inputs(path: str, catalog_path: str | None) -> tuple[Any, Any]:
    """The snapshot and the catalog override, with errors the user can act on."""
    import sys

    from api.catalog import load_catalog
    from api.snapshot import SnapshotError, load_snapshot, parse_snapshot

    try:
        snapshot = parse_snapshot(sys.stdin.read(), "<stdin>") if path == "-" else load_snapshot(path)
    except FileNotFoundError as exc:
        raise CliError(f"snapshot file {path!r} not found") from exc
    except SnapshotError as exc:
        raise CliError(str(exc)) from exc
    require_pools_or_nodes(snapshot_kinds(snapshot), snapshot.source)
    catalog = None
    if catalog_path:
        try:
            catalog = load_catalog(catalog_path)
        except FileNotFoundError as exc:
            raise CliError(f"catalog file {catalog_path!r} not found") from exc
        except Exception as exc:
            raise CliError(f"catalog {catalog_path}: {exc}") from exc
    return snapshot, catalog


def _pool_annotations(snapshot: Any) -> list[tuple[str, dict[str, str]]]:
    """Each NodePool's name and annotations."""
    metas = [(np.to_dict() if hasattr(np, "to_dict") else np).get("metadata") or {} for np in snapshot.node_pools]
    return [(m.get("name", ""), dict(m.get("annotations") or {})) for m in metas]


def handle(args: argparse.Namespace) -> int:
    """The plan with the simulation's default topology spread (--default-topology-spread) and minValues policy
    (--min-values-policy) and fill policy (--fill-policy) in force."""
    from planning.scheduling.default_spread import default_spread
    from planning.scheduling.fill_policy import fill_policy
    from planning.scheduling.fill_policy import parse as parse_fill
    from planning.scheduling.min_values import min_values_policy, parse

    spread = _default_spread(getattr(args, "default_topology_spread", "none"))
    with default_spread(spread), min_values_policy(parse(getattr(args, "min_values_policy", "Strict"))), \
            fill_policy(parse_fill(getattr(args, "fill_policy", "CostAware"))):
        return _handle(args, spread)


def _handle(args: argparse.Namespace, spread: Any) -> int:
    from planning.disruption.optimizer import SolverMissingError
    from planning.planner.accounting import hold_for_pause
    from planning.planner.buffer_report import buffer_rows
    from planning.planner.deletion_cost_report import deletion_cost_rows
    from planning.planner.expiry_report import expiry_rows
    from planning.planner.plan import explain_plan
    from planning.planner.scheduling_report import scheduling_report
    from planning.planner.spot_fallback_report import spot_fallback_rows
    from planning.policies.drift_backoff import backoff_rows
    from planning.policies.zone_balance import zone_balance_rows
    from planning.scheduling.nodeclass_readiness import pools_that_cannot_launch

    at = parse_at(args.at)
    exclude: set[str] = set()
    kubeconfig = live_kubeconfig(args)
    if kubeconfig:
        snapshot, exclude = load_live_snapshot(kubeconfig, args.context)
        require_pools_or_nodes(snapshot_kinds(snapshot), snapshot.source)
        catalog = load_catalog_arg(args.catalog)
    else:
        snapshot, catalog = load_inputs(args.filename, args.catalog)
    try:
        explained = explain_plan(snapshot, at, until_stable=args.until_stable, catalog=catalog, exclude_nodes=exclude,
                                 optimize=args.optimize, repair=_repair_policies(args.node_repair_toleration,
                                                                         args.legacy_node_repair))
    except SolverMissingError as exc:
        raise CliError(str(exc)) from exc
    result = explained.result
    data = result.to_public()
    data["provisioning"], unservable, cost_limits, headroom = _provisioning(snapshot, catalog, at)
    data["nodePoolsBlocked"] = pools_that_cannot_launch(snapshot)  # a missing / not Ready EC2NodeClass
    data["repairs"] = [r.to_public() for r in result.repairs]  # node repair (docs/contracts.md §3.1)
    data["repairsBlocked"] = [b.to_public() for b in result.repairs_blocked]
    data["repairsVetoed"] = [r.to_public() for r in result.repairs_vetoed]  # karpenter.sh/do-not-repair
    data["staticNodePools"] = result.static_public()  # static NodePools and StaticDrift (docs/contracts.md §3.1)
    data["disruptionPolicies"] = [p.to_public() for p in result.policy_pools]  # DisruptionPolicy (§3.1)
    data["skippedMoves"] = [m.model_dump(mode="json", by_alias=True) for m in result.skipped]
    data["excluded"] = _excluded(snapshot, catalog)  # nodes no decision counts, and why (docs/contracts.md §3.1)
    data["nodeOverlays"] = _overlays(snapshot, catalog)  # what each NodeOverlay priced (docs/semantics.md §16.2)
    data["costLimits"] = cost_limits  # each cost limit's headroom (docs/semantics.md §15.10)
    data["expiry"] = expiry_rows(snapshot, result.at, catalog, result.commands)  # with jitter (semantics §15.12)
    # spot fallbacks and their return, zone balance (docs/semantics.md §15.5-15.6); new keys go last (contracts §7)
    data["spotFallbacks"] = spot_fallback_rows(snapshot, result.at, catalog, result.commands, result.blocked)
    data["zoneBalance"] = zone_balance_rows(snapshot, result.at, catalog)
    data["driftBackoffs"] = backoff_rows(_pool_annotations(snapshot), result.at)  # (kubernetes-sigs/karpenter#3080)
    # every node's outcome, what spent each budget, the global pause (docs/contracts.md §3.1)
    pause = planner_pause(args, live=bool(kubeconfig))
    rows = hold_for_pause(explained.nodes, pause["resume"]) if pause["paused"] else explained.nodes
    data["nodes"] = [r.to_public() for r in rows]
    data["budgetUse"] = explained.budget_use
    _shown_budgets(data, snapshot)
    data["plannerPause"] = pause
    data["scheduling"] = scheduling_report(snapshot, spread)  # default topology spread, resizing pods (§3.5)
    data["scheduling"]["podsVolumeLimited"] = result.scheduling_counts.get("volumeLimitedPods", 0)  # first pass
    data["capacityBuffers"] = buffer_rows(snapshot.others, headroom)  # the headroom kept (docs/semantics.md §20)
    data["deletionCost"] = deletion_cost_rows(snapshot, result.at, catalog)  # pod deletion cost order (§3.6)
    print_output(data, args.output, table=lambda d: render_plan(d, unservable))
    return 0


def _shown_budgets(data: dict[str, Any], snapshot: Any) -> None:
    """`budgets` and `budgetUse` (parallel rows) keep the contract's three reasons per NodePool, and `Unhealthy`
    where the pool's budgets name it (api.budgets.shown_reasons); the pass itself weighed every reason."""
    shown = shown_reasons(snapshot.node_pools)
    keep = [b.get("reason") in shown.get(b.get("nodePool"), ()) for b in data["budgets"]]
    data["budgets"] = [b for b, k in zip(data["budgets"], keep, strict=True) if k]
    if len(data["budgetUse"]) == len(keep):
        data["budgetUse"] = [u for u, k in zip(data["budgetUse"], keep, strict=True) if k]


def planner_pause(args: argparse.Namespace, live: bool) -> dict[str, Any]:
    """`plannerPause`: whether `nodeflow pause` (the paused planner schedule, where the planner's passes come from)
    holds every command. Read from Temporal with --kubeconfig, --address or NODEFLOW_TEMPORAL_ADDRESS; `paused` is
    null when it was not read, `why` says so. Never fails the plan."""
    import os

    from client.planner_schedule import PLANNER_SCHEDULE_ID

    sid = getattr(args, "schedule_id", None) or PLANNER_SCHEDULE_ID
    resume = "nodeflow resume" + (f" --schedule-id {sid}" if sid != PLANNER_SCHEDULE_ID else "")
    out: dict[str, Any] = {"paused": None, "schedule": sid, "note": None, "resume": resume, "why": None}
    address = getattr(args, "address", None) or os.environ.get("NODEFLOW_TEMPORAL_ADDRESS")
    if not live and not address:
        out["why"] = "not read: a snapshot has no planner schedule; --address (or NODEFLOW_TEMPORAL_ADDRESS) reads it"
        return out
    try:
        out["paused"], out["note"] = read_planner_schedule(args, sid)
    except Exception as exc:  # unreachable, not found, auth: the plan still answers, and says what it could not read
        out["why"] = f"unknown: cannot read schedule {sid} at {address or 'the default address'}: {_why(exc)}"
    return out


def _why(exc: Exception) -> str:
    """One line for a failed schedule read, naming what fixes it."""
    from temporalio.service import RPCError, RPCStatusCode

    if isinstance(exc, RPCError) and exc.status == RPCStatusCode.NOT_FOUND:
        return "no such schedule (the worker creates it; --schedule-id names another)"
    if isinstance(exc, TimeoutError):
        return "no answer within 10 s"
    if isinstance(exc, TemporalUnreachableError):
        return "Temporal not reachable (set --address or NODEFLOW_TEMPORAL_ADDRESS)"
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


class TemporalUnreachableError(Exception):
    """The connection to Temporal failed (the SDK raises a bare RuntimeError for it)."""


def read_planner_schedule(args: argparse.Namespace, schedule_id: str) -> tuple[bool, str | None]:
    """(paused, its note) of the planner schedule, within 10 s."""
    import asyncio

    from client.connection import connect

    async def read() -> tuple[bool, str | None]:
        try:
            client = await connect(getattr(args, "address", None), getattr(args, "namespace", None),
                                   api_key=getattr(args, "api_key", None))
        except Exception as exc:
            raise TemporalUnreachableError(str(exc)) from exc
        state = (await client.get_schedule_handle(schedule_id).describe()).schedule.state
        return state.paused, state.note or None

    async def bounded() -> tuple[bool, str | None]:
        return await asyncio.wait_for(read(), 10)

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # the command line: no loop yet
        return asyncio.run(bounded())
    # called from a running loop (an embedding program, an async test): asyncio.run would refuse it
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, bounded()).result()


def _default_spread(value: str) -> Any:
    from planning.scheduling.default_spread import load_default_spread

    try:
        return load_default_spread(value)
    except ValueError as exc:
        raise CliError(f"--default-topology-spread: {exc}") from exc


def _repair_policies(toleration: str, legacy: bool = False) -> Any:
    from planning.disruption.repair import RepairPolicies, default_policies

    try:
        return RepairPolicies(default_policies(parse_duration(toleration)), legacy=legacy)
    except DurationError as exc:
        raise CliError(f"--node-repair-toleration: {exc}") from exc


def _excluded(snapshot: Any, catalog: Any) -> list[dict[str, str]]:
    """The snapshot's nodes the planner leaves out (no NodeClaim, not initialized, no or an unknown NodePool):
    built from its nodes, claims and pools only, the pods are not needed."""
    from planning.cluster import Cluster
    from planning.disruption.exclusions import excluded_nodes

    cluster = Cluster.from_parts(snapshot, (), catalog)
    return [e.to_public() for e in excluded_nodes(cluster.nodes, cluster.pools)]


def _overlays(snapshot: Any, catalog: Any) -> list[dict[str, Any]]:
    """Each NodeOverlay of the snapshot, heaviest first: the offerings whose price it decided, the types it added
    capacity to, and whether it conflicted (then it is applied nowhere)."""
    from api.catalog import load_default_catalog
    from api.node_overlay import by_weight
    from planning.cluster import parse_pool
    from planning.pricing.overlays import overlay_pool_labels, priced_by_overlays

    overlays = getattr(snapshot, "node_overlays", None) or []
    if not overlays:
        return []
    pools = {p.name: overlay_pool_labels(p.name, p.template_labels) for p in map(parse_pool, snapshot.node_pools)}
    result = priced_by_overlays(catalog or snapshot.catalog or load_default_catalog(), overlays, pools)
    return [{"name": o.name, "weight": o.weight, "offeringsPriced": result.priced.get(o.name, 0),
             "typesGivenCapacity": result.gave_capacity.get(o.name, 0), "conflict": o.name in result.conflicts}
            for o in by_weight(overlays)]


def _provisioning(snapshot: Any, catalog: Any, at: datetime
                  ) -> tuple[list[dict[str, Any]], list[Any], list[dict[str, Any]], dict[str, Any]]:
    """The NodeClaims the provisioner would launch for the pending pods (docs/contracts.md §3.1), the pods
    no NodePool serves (table only), each cost limit's headroom after them (`costLimits`, semantics §15.10) and
    where each CapacityBuffer's chunks went (§20); launching claims' liveness TTLs measured at `--at`."""
    from planning.provisioning.provisioner import decide

    decision = decide(snapshot, catalog, at=at)
    return ([launch.to_public() for launch in decision.launches], decision.unservable, decision.cost_limits,
            decision.headroom)


def _render_scheduling(sched: dict[str, Any]) -> list[str]:
    """One line when the simulation ran with default spread constraints, pods are being resized or a volume
    attachment limit kept pods off a node, else none."""
    spread = sched.get("defaultTopologySpread") or {}
    parts = []
    if spread.get("constraints"):
        keys = ", ".join(f"{c['topologyKey']} maxSkew {c['maxSkew']} {c['whenUnsatisfiable']}"
                         for c in spread["constraints"])
        parts.append(f"default topology spread {spread['mode']} ({keys}) on {spread.get('podsDefaulted', 0)} pods")
    if sched.get("podsResizing"):
        parts.append(f"{sched['podsResizing']} pods counted at their in-place resize")
    if sched.get("podsVolumeLimited"):
        parts.append(f"{sched['podsVolumeLimited']} pods kept off a node by its volume attachment limit "
                     "(why: the node's NODES detail or BLOCKED reason, or the command's pod line)")
    return [f"SCHEDULING: {'; '.join(parts)}", ""] if parts else []


def render_plan(data: dict[str, Any], unservable: Sequence[Any] = ()) -> str:
    """People's view: budgets, each command with its pod moves and savings, each blocked node and why, the
    NodeClaims provisioning would launch and the pending pods no NodePool serves."""
    out = [f"Plan at {data['at']}", ""]
    pause = data.get("plannerPause") or {}
    held = bool(pause.get("paused"))
    out += _render_pause(pause)
    out += _render_scheduling(data.get("scheduling") or {})
    out.append("BUDGETS")
    use = data.get("budgetUse") or [{} for _ in data["budgets"]]
    out.append(render_table(
        ["NODEPOOL", "REASON", "LIMIT", "TOTAL", "DISRUPTING", "ALLOWED", "USED BY"],
        [[b["nodePool"], b["reason"], "-" if b["limit"] is None else b["limit"], b["total"], b["disrupting"],
          b["allowed"], _used_by(u)] for b, u in zip(data["budgets"], use, strict=False)]).rstrip())
    out.append("")
    commands = data["commands"]
    out.append(f"COMMANDS ({len(commands)})" if commands else "COMMANDS: none")
    for i, cmd in enumerate(commands, start=1):
        decision = "replace" if cmd["replacements"] else "delete"
        out.append(f"{i}. {'[held] ' if held else ''}{cmd['method']} ({cmd['reason']}, nodepool {cmd['nodePool']}): "
                   f"{decision} {', '.join(cmd['nodes'])}; saves ${cmd['savingsPerHour']:.4f}/h")
        for j, rep in enumerate(cmd["replacements"]):
            types = ", ".join(rep["instanceTypes"][:5]) + (" ..." if len(rep["instanceTypes"]) > 5 else "")
            where = f" in {rep['zone']}" if rep.get("zone") else ""
            out.append(f"   new-{j}: {rep['capacityType']} {types}{where} at ${rep['price']:.4f}/h")
        for mv in cmd["pods"]:
            out.append(f"   pod {mv['pod']} -> {mv['to']}" + (f" ({mv['why']})" if mv.get("why") else ""))
        if not cmd["pods"]:
            out.append("   no pods to move")
    out.append("")
    blocked = data["blocked"]
    out.append(f"BLOCKED ({len(blocked)})" if blocked else "BLOCKED: none")
    if blocked:
        out.append(render_table(["NODE", "REASON"], [[b["node"], b["reason"]] for b in blocked]).rstrip())
    if data.get("excluded"):
        out.append("")
        out.append(f"EXCLUDED ({len(data['excluded'])}): nodes no decision counts")
        out.append(render_table(["NODE", "REASON", "MESSAGE"],
                                [[e["node"], e["reason"], e["message"]] for e in data["excluded"]]).rstrip())
    if data.get("nodePoolsBlocked"):
        out.append("")
        out.append(f"NODEPOOLS THAT CANNOT LAUNCH ({len(data['nodePoolsBlocked'])})")
        out.append(render_table(["NODEPOOL", "REASON"],
                                [[p["nodePool"], p["reason"]] for p in data["nodePoolsBlocked"]]).rstrip())
    out.append("")
    out += _render_policies(data.get("disruptionPolicies") or [], data.get("skippedMoves") or [])
    out += _render_overlays(data.get("nodeOverlays") or [])
    out += _render_repairs(data.get("repairs") or [], data.get("repairsBlocked") or [], data.get("repairsVetoed") or [])
    out += _render_static(data.get("staticNodePools") or [])
    out += _render_backoffs(data.get("driftBackoffs") or [])
    out += _render_deletion_cost(data.get("deletionCost") or [])
    out += _render_provisioning(data.get("provisioning") or [], unservable)
    out += render_buffers(data.get("capacityBuffers") or [])
    out += render_cost_limits(data.get("costLimits") or []) + render_expiry(data.get("expiry") or [])
    out += render_spot_fallbacks(data.get("spotFallbacks") or []) + render_zone_balance(data.get("zoneBalance") or [])
    out += _render_nodes(data.get("nodes") or [])
    final = data["final"]
    out.append(f"FINAL: {final['nodes']} nodes, ${final['costPerHour']:.4f}/h after {final['passes']} pass(es)")
    return "\n".join(out) + "\n"


def _render_pause(pause: dict[str, Any]) -> list[str]:
    """The global pause first: with it no command of the plan runs."""
    if pause.get("paused"):
        note = f" ({pause['note']})" if pause.get("note") else ""
        return [f"PLANNER PAUSED{note}: `nodeflow pause` holds every command below (schedule {pause['schedule']}); "
                f"`{pause['resume']}` lets them run", ""]
    if pause.get("paused") is None and str(pause.get("why") or "").startswith("unknown"):
        return [f"PLANNER PAUSE {pause['why']}", ""]
    return []


def _used_by(use: dict[str, Any]) -> str:
    """What spent a budget row: this pass's commands (nodes each) and the nodes already disrupting."""
    parts = [f"{c['command']} ({len(c['nodes'])})" for c in use.get("commands") or ()]
    if use.get("disrupting"):
        parts.append("disrupting: " + ", ".join(use["disrupting"]))
    return "; ".join(parts) or "-"


def _render_nodes(nodes: list[dict[str, Any]]) -> list[str]:
    """Every node once: disrupted, blocked, excluded or kept, with the reason (docs/contracts.md §3.1 `nodes`)."""
    if not nodes:
        return []
    counts: dict[str, int] = {}
    for n in nodes:
        counts[n["outcome"]] = counts.get(n["outcome"], 0) + 1
    summary = ", ".join(f"{v} {k.lower()}" for k, v in counts.items())
    rows = [[n["node"], n["nodePool"] or "-", n["outcome"], n["reason"],
             n["detail"] + (f" (until {n['until']})" if n.get("until") and n["until"] not in n["detail"] else "")]
            for n in nodes]
    return [f"NODES ({len(nodes)}: {summary})",
            render_table(["NODE", "NODEPOOL", "OUTCOME", "REASON", "DETAIL"], rows).rstrip(), ""]


def _render_overlays(overlays: list[dict[str, Any]]) -> list[str]:
    if not overlays:
        return []
    rows = [[o["name"], o["weight"], o["offeringsPriced"], o["typesGivenCapacity"],
             "conflict: applied nowhere" if o["conflict"] else ""] for o in overlays]
    return [f"NODEOVERLAYS ({len(overlays)})",
            render_table(["NODEOVERLAY", "WEIGHT", "OFFERINGS PRICED", "TYPES GIVEN CAPACITY", "NOTE"], rows).rstrip(),
            ""]


def _render_policies(pools: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> list[str]:
    """Each NodePool's DisruptionPolicy and its calendar hold or conflict; the consolidation moves not worth it."""
    out: list[str] = []
    if pools:
        out.append(f"DISRUPTION POLICIES ({len(pools)})")
        drains = any(p.get("drain") for p in pools)  # the DRAIN column only when a pool has drain.jobs Wait
        out.append(render_table(["NODEPOOL", "POLICY", "NOW", *(["DRAIN"] if drains else [])],
                                [[p["nodePool"], p["policy"] or "-", p["conflict"] or p["held"] or "may disrupt",
                                  *([p.get("drain") or "-"] if drains else [])] for p in pools]).rstrip())
        out.append("")
    if skipped:
        out.append(f"SKIPPED MOVES ({len(skipped)})")
        out += [f"{m['method']} (nodepool {m['nodePool']}): {', '.join(m['nodes'])}, {m['pods']} pod(s): {m['reason']}"
                for m in skipped]
        out.append("")
    return out


def _render_repairs(repairs: list[dict[str, Any]], held: list[dict[str, Any]],
                    vetoed: list[dict[str, Any]] | None = None) -> list[str]:
    """Unhealthy nodes past their toleration that the planner terminates now (legacy repair; the v1.15 method's are
    commands), the pools a safety valve (20% of a pool, a zone outage) holds back, and the vetoed nodes."""
    if not repairs and not held and not vetoed:
        return []
    out = [f"NODE REPAIR ({len(repairs)})" if repairs else "NODE REPAIR: none"]
    if repairs:
        out.append(render_table(["NODE", "NODEPOOL", "CONDITION", "SINCE"],
                                [[r["node"], r["nodePool"], f"{r['condition']}={r['status']}", r["since"]]
                                 for r in repairs]).rstrip())
    for b in held:
        out.append(f"held back: {b['message']} ({', '.join(b['held'])})")
    for r in vetoed or []:
        out.append(f"vetoed: node {r['node']} (nodepool {r['nodePool']}, {r['condition']}={r['status']} since "
                   f"{r['since']}) carries karpenter.sh/do-not-repair")
    return [*out, ""]


def _render_static(pools: list[dict[str, Any]]) -> list[str]:
    """Each static NodePool: its nodes against its replicas, then what it launches, removes and replaces (drift)."""
    if not pools:
        return []
    out = [f"STATIC NODEPOOLS ({len(pools)})"]
    for p in pools:
        n = p["nodes"]
        out.append(f"nodepool {p['nodePool']}: {p['replicas']} replicas; {n['running']} running "
                   f"({n['launching']} launching), {n['pendingDisruption']} being disrupted, {n['deleting']} deleting"
                   + (f"; limits.nodes {p['limitNodes']}" if p["limitNodes"] is not None else ""))
        if p["launch"]:
            out.append(f"   launch {p['launch']}: {p['capacityType']} {', '.join(p['instanceTypes'][:5])}"
                       + (" ..." if len(p["instanceTypes"]) > 5 else ""))
        out += [f"   remove {r['node']} ({r['why']}, {r['pods']} pod(s))" for r in p["remove"]]
        out += [f"   delete drifted {d['node']} first ({d['terminateFirst']}); the scale-up re-creates it"
                if d.get("terminateFirst") else
                f"   replace drifted {d['node']} with {d['capacityType']} {', '.join(d['instanceTypes'][:3])}"
                for d in p["drift"]]
        if p["held"]:
            out.append(f"   held: {p['held']}")
    return [*out, ""]


def _render_backoffs(rows: list[dict[str, Any]]) -> list[str]:
    """Each NodePool whose drift backs off after failed replacements, and until when."""
    if not rows:
        return []
    return [f"DRIFT BACK-OFF ({len(rows)})", *(f"nodepool {r['nodePool']}: {r['message']}" for r in rows), ""]


def _render_deletion_cost(rows: list[dict[str, Any]]) -> list[str]:
    """The nodes a ReplicaSet scale-down should empty first, as the PodDeletionCostManagement gate would mark them."""
    marked = [r for r in rows if r["cost"] is not None]
    if not marked:
        return []
    shown = ", ".join(f"{r['node']} ({r['tier']}, {r['cost']})" for r in marked[:10])
    more = f" and {len(marked) - 10} more" if len(marked) > 10 else ""
    return [f"POD DELETION COST ({len(marked)} node(s), first emptied first): {shown}{more}", ""]


def _render_provisioning(launches: list[dict[str, Any]], unservable: Sequence[Any]) -> list[str]:
    """Each NodeClaim to launch with its pods; then the pending pods no NodePool serves and each pool's reason
    (the Event the pod gets)."""
    out = [f"PROVISIONING ({len(launches)} NodeClaim(s))" if launches else "PROVISIONING: none"]
    for i, launch in enumerate(launches, start=1):
        types = ", ".join(launch["instanceTypes"][:5]) + (" ..." if len(launch["instanceTypes"]) > 5 else "")
        out.append(f"{i}. nodepool {launch['nodePool']}: {launch['capacityType']} {types}")
        out += [f"   pod {pod}" for pod in launch["pods"]]
    if unservable:
        out.append(f"NO NODEPOOL SERVES ({len(unservable)})")
        out.append(render_table(["POD", "WHY"], [[u.pod, u.message()] for u in unservable]).rstrip())
    return [*out, ""]
