"""`nodeflow demo`: the whole system on one machine — Temporal (with its Web UI), moto, the simulated cluster,
the worker (with its pending-pod intake) and the planner — on a 30-node cluster where every kind of disruption has
work to do, plus a Deployment scaled up after 20 s and a spot interruption after 30 s. `--headless --duration S
--report FILE` runs it unattended and writes a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
import uuid
import warnings
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from api import labels as L
from api.provider_id import instance_id_from_provider_id
from starter import sim_extra
from starter.cli import PLUGIN_EXECUTABLE
from starter.cmd_instance_types import EC2_ENDPOINT_ENV
from starter.output import CliError

# The simulated world (the [sim] extra, starter/sim_extra.py) is imported inside the command, after the check
# that it is installed, and so are the demo's scripted moments (starter/demo_capacity.py, demo_nodeclass.py: 3 ms of
# `nodeflow --help`, which builds every command's parser); as in every command, our modules that load pydantic,
# temporalio or kubernetes are imported where they are used: --help takes 0.13 s without them, 0.83 s with them
# (farm-bench, median).

INTERRUPT_AFTER = 30.0
DO_NOT_DISRUPT_NODE = "general-01"  # the bundled scenario's node with the do-not-disrupt ledger pod
DEFAULT_REGION = "us-east-1"  # the bundled catalog's region: there the demo plans on it, elsewhere on discovery


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("demo", help="run the embedded stack on a simulated cluster",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--headless", action="store_true", help="no live view and no Web UI; stop after --duration")
    p.add_argument("--duration", type=float, default=None,
                   help="seconds to run (default: until Ctrl-C; 180 when --headless)")
    p.add_argument("--report", type=Path, help="write the JSON summary here")
    p.add_argument("--workdir", type=Path, default=Path("out/demo"), help="logs, kubeconfig, Temporal db")
    p.add_argument("-f", "--scenario", type=Path, help="cluster snapshot to run on (default: the bundled one)")
    p.add_argument("--no-interruption", action="store_true", help="do not inject the spot interruption")
    p.add_argument("--region", default=DEFAULT_REGION,
                   help="AWS region the whole demo runs in: its zones (EC2's DescribeAvailabilityZones), subnets "
                        "and, outside us-east-1, its instance types and prices discovered from EC2 and the Pricing "
                        f"API (default: {DEFAULT_REGION})")
    p.add_argument("--settle", type=float, default=90.0,
                   help="seconds to let in-flight work finish before the report (planner paused)")
    p.add_argument("--until-moments", action="store_true",
                   help="end before --duration once every scripted moment has happened and reached its milestone "
                        "(the expired nodes' pods re-homed, the scale-up's pods Running, the interrupted spot "
                        "node's termination begun, the new AMI's first Drift disruption); --duration still bounds "
                        "the run (for tests: the settle then lets what they set off finish)")
    p.add_argument("--moments-speed", type=float, default=1.0,
                   help="play the scripted moments this many times sooner: the scale-up, the spot interruption and "
                        "the new AMI come at 20, 30 and 40 s divided by it (for tests; default 1)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    sim_extra.require("demo", sim_extra.DEMO_MODULES)
    duration = args.duration if args.duration is not None else (180.0 if args.headless else None)
    if duration is not None and duration <= 0:
        raise CliError("--duration must be positive")
    if args.moments_speed <= 0:
        raise CliError("--moments-speed must be positive")
    _check_region(args.region)
    try:
        return asyncio.run(_demo(args, duration))
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM: the stack was stopped on the way out
        return 143


def _check_region(region: str) -> None:
    """A region EC2 has (botocore's endpoint data, offline): another would fail deep inside the EC2 stand-in."""
    import boto3

    if region not in boto3.session.Session().get_available_regions("ec2"):
        raise CliError(f"--region {region}: not an EC2 region (e.g. us-east-1, eu-west-1)")


def _write_scenario(workdir: Path, zones: tuple[str, ...]) -> Path:
    """The bundled scenario with its nodes in `zones` (the region's, once moto runs)."""
    import yaml

    from devstack.demo_scenario import demo_cluster

    path = workdir / "demo-cluster.yaml"
    path.write_text(yaml.safe_dump_all(demo_cluster(node_classes=True, zones=zones), sort_keys=False))
    return path


async def _demo(args: argparse.Namespace, duration: float | None) -> int:
    from starter.demo_report import cost_per_hour

    say = (lambda *a: print(*a, file=sys.stderr)) if args.headless else print
    stack = await _start_stack(args, say)
    try:
        catalog = stack.catalog()
        core = _core(stack)
        initial = _nodes(core)
        cost_before, nodes_before = cost_per_hour(initial, catalog), len(initial)
        for line in _hints(stack, {(n.get("metadata") or {}).get("name", "") for n in initial}):
            say(line)
        moments = _Moments(rehoming=_watch_rehoming(core, initial) if args.scenario is None else None)
        await _run_live(stack, core, catalog, cost_before, args, duration, say, moments)
        if not args.headless:
            print("time is up: pausing the planner and letting in-flight work finish ...", flush=True)
        report = await _final_report(stack, core, catalog, cost_before, nodes_before, args.settle, say)
        report.update(await moments.report(stack, core))
        _write_report(report, args.report, say)
        failed = ("pdbViolations", "leakedInstances", "stuckFinalizers", "podsPendingAtEnd")
        return 1 if any(report[key] for key in failed) else 0
    finally:
        await stack.stop()


async def _start_stack(args: argparse.Namespace, say: Any) -> Any:
    """Temporal, moto, the simulator and the worker; SIGTERM unwinds like Ctrl-C so no server is left running."""
    from devstack.stack import Stack, StackOptions

    # the SDK's sizing note about the worker's thread pool is for operators tuning a deployment, not demo viewers
    warnings.filterwarnings("ignore", message="Worker max_concurrent_activities", category=UserWarning)
    args.workdir.mkdir(parents=True, exist_ok=True)
    _log_to_file(args.workdir / "worker.log")
    if args.scenario is not None and not args.scenario.exists():
        raise CliError(f"{args.scenario}: no such file")
    task = asyncio.current_task()
    if task is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    bundled = None if args.scenario is not None else (lambda zones: _write_scenario(args.workdir, zones))
    stack = Stack(StackOptions(workdir=args.workdir, scenario=args.scenario, headless_ui=args.headless,
                               interruption=not args.no_interruption, node_classes=args.scenario is None,
                               provisioning=True, region=args.region, scenario_for_zones=bundled,
                               discover_instance_types=args.region != DEFAULT_REGION))
    say(f"starting Temporal dev server, moto (EC2 + SQS), the simulated cluster and the worker in {args.region} ...")
    t0 = time.monotonic()
    try:
        await stack.start()
    except asyncio.CancelledError:
        await stack.stop()
        raise
    except Exception as exc:  # any part that cannot start makes the demo fail loudly
        await stack.stop()
        raise CliError(f"the stack could not start: {exc} (logs in {args.workdir})") from exc
    say(f"up in {time.monotonic() - t0:.1f}s (logs in {args.workdir})")
    return stack


@dataclass
class _Moments:
    """The demo's scripted moments and what each has reached (None: not yet, or no place for it in the scenario)."""

    interrupted_node: str | None = None  # "-": no spot node to interrupt
    interruption_note: str = ""
    interruption_begun: bool = False  # the interrupted node is deleting or gone
    scale_up: Any = None  # starter.demo_capacity.ScaleUp
    rollout: Any = None  # starter.demo_nodeclass.AmiRollout
    rehoming: Any = None  # starter.demo_capacity.Rehoming

    def notes(self) -> list[str]:
        parts = (self.scale_up, self.rehoming, self.rollout)
        return [n for n in (self.interruption_note, *(m.note() for m in parts if m is not None)) if n]

    async def observe(self, stack: Any, core: Any) -> list[str]:
        """Milestones reached now, one line each."""
        lines = []
        for moment in (self.scale_up, self.rehoming):
            if moment is not None:
                lines += await asyncio.to_thread(moment.observe, core)
        if self.rollout is not None:
            lines += await self.rollout.observe(stack)
        if self.interrupted_node is not None and not self.interruption_begun:
            self.interruption_begun = await asyncio.to_thread(_deleting_or_gone, core, self.interrupted_node)
        return lines

    def all_reached(self, stack: Any, bundled: bool) -> bool:
        """Every moment this run has (`_advance`'s) has happened and reached its milestone (--until-moments)."""
        return all((self.rehoming is None or self.rehoming.rehomed_after is not None,
                    not bundled or (self.scale_up is not None and self.scale_up.running_after is not None),
                    not stack.queue_url or self.interruption_begun,
                    stack.aws is None or (self.rollout is not None and self.rollout.first_drift_after is not None)))

    async def report(self, stack: Any, core: Any) -> dict[str, Any]:
        """The moments' report keys (docs/contracts.md §4), after a last look at the settled cluster."""
        await self.observe(stack, core)
        named = (("scaleUp", self.scale_up), ("expiration", self.rehoming), ("amiRollout", self.rollout))
        return {key: moment.report() for key, moment in named if moment is not None}


async def _run_live(stack: Any, core: Any, catalog: Any, cost_before: float, args: argparse.Namespace,
                    duration: float | None, say: Any, moments: _Moments) -> None:
    """Until the duration is up: watch the worker, run the scripted moments (_advance), redraw the live view."""
    from starter.demo_report import cost_per_hour, render_live

    screen = _LiveScreen(sys.stdout)
    recent_cache: dict[str, str] = {}
    start = time.monotonic()
    while duration is None or time.monotonic() - start < duration:
        await asyncio.sleep(2.0)
        failure = stack.worker_failed()
        if failure is not None:
            raise CliError(f"the worker stopped: {failure}")
        elapsed = time.monotonic() - start
        lines = await _advance(stack, core, moments, elapsed, bundled=args.scenario is None,
                               speed=args.moments_speed)
        lines += await moments.observe(stack, core)
        if args.headless:
            for line in lines:
                say(line)
        else:
            nodes = _nodes(core)
            flying = await _in_flight(stack.client)
            recent = await _recent(stack.client, recent_cache)
            screen.show(render_live(elapsed, _states(nodes), flying, cost_per_hour(nodes, catalog), cost_before,
                                    stack.temporal.ui_url, note="\n        ".join(moments.notes()), recent=recent))
        if args.until_moments and moments.all_reached(stack, bundled=args.scenario is None):
            say(f"every scripted moment reached its milestone at {elapsed:.0f}s: ending the run")
            return


async def _advance(stack: Any, core: Any, m: _Moments, elapsed: float, bundled: bool,
                   speed: float = 1.0) -> list[str]:
    """Start each scripted moment once its time (divided by `speed`, --moments-speed) has come: the scale-up
    (bundled scenario), the spot interruption, the new AMI for the memory class (starter/demo_nodeclass.py).
    Returns what was done, one line each."""
    from starter.demo_capacity import SCALE_UP_AFTER, scale_up
    from starter.demo_nodeclass import NEW_IMAGE_AFTER, register_new_image

    lines = []
    script = elapsed * speed  # the script's clock
    if bundled and m.scale_up is None and script >= SCALE_UP_AFTER:
        m.scale_up = await asyncio.to_thread(scale_up, core, elapsed)
        if m.scale_up is not None:
            before, after = m.scale_up.replicas
            lines.append(f"scaled Deployment {m.scale_up.app} from {before} to {after} at {elapsed:.0f}s")
    if stack.queue_url and m.interrupted_node is None and script >= INTERRUPT_AFTER:
        m.interrupted_node = _inject_spot_interruption(stack, core) or "-"
        m.interruption_note = f"spot interruption warning sent for node {m.interrupted_node} at {elapsed:.0f}s"
        lines.append(f"injected a spot interruption warning for node {m.interrupted_node}")
    if stack.aws is not None and m.rollout is None and script >= NEW_IMAGE_AFTER:
        m.rollout = await register_new_image(stack)
        lines.append(f"registered a new AMI {m.rollout.image} for EC2NodeClass memory at {elapsed:.0f}s")
    return lines


def _deleting_or_gone(core: Any, name: str) -> bool:
    """The node has a deletionTimestamp or no longer exists ("-": there was none to interrupt)."""
    if name == "-":
        return True
    return not any((n.get("metadata") or {}).get("name") == name and not (n.get("metadata") or {}).get(
        "deletionTimestamp") for n in _nodes(core))


def _watch_rehoming(core: Any, nodes: list[dict[str, Any]]) -> Any:
    from starter.demo_capacity import watch_rehoming

    return watch_rehoming(core, nodes)


def _write_report(report: dict[str, Any], path: Path | None, say: Any) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2) + "\n")
        say(f"report written to {path}")
    print(json.dumps(report, indent=2))


def _log_to_file(path: Path) -> None:
    """The worker's and the SDK's log lines go to the workdir, so they never scroll the live view away."""
    import logging

    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def command_path(name: str) -> str:
    """How to type `name` so that it runs from here: bare when PATH finds it, else the path of the copy in this
    Python's bin (relative to the working directory when under it, e.g. `.venv/bin/nodeflow`)."""
    import os
    import shutil

    found = shutil.which(name)
    if found is not None:
        return name
    local = Path(sys.executable).parent / name
    if not local.exists():
        return name
    try:
        return os.path.relpath(local) if local.resolve().is_relative_to(Path.cwd().resolve()) else str(local)
    except ValueError:  # another drive
        return str(local)


def aws_environment(stack: Any) -> str:
    """The AWS settings that reach the demo's EC2 stand-in as the worker does (`nodeflow instance-types`): its
    endpoint, region and the stand-in's credentials (moto takes any)."""
    env = stack.o.env
    return (f"{EC2_ENDPOINT_ENV}={stack.moto.endpoint} AWS_REGION={stack.o.region} "
            f"AWS_ACCESS_KEY_ID={env['AWS_ACCESS_KEY_ID']} AWS_SECRET_ACCESS_KEY={env['AWS_SECRET_ACCESS_KEY']}")


def _hints(stack: Any, node_names: set[str]) -> list[str]:
    """What to try while the demo runs; every command here works against this stack as printed (with the
    environment it prints first)."""
    import shutil
    from urllib.parse import quote

    victim, why = DO_NOT_DISRUPT_NODE, "its ledger pod is do-not-disrupt: the drain waits"
    if victim not in node_names:  # a scenario of the user's own
        victim, why = min(node_names or {"NODE"}), "then watch its TerminationWorkflow"
    kubeconfig = Path(stack.kubeconfig).resolve()
    address = stack.temporal.address
    nf, kubectl = command_path("nodeflow"), command_path("kubectl")
    lines = [f"  environment:  export KUBECONFIG={kubeconfig} NODEFLOW_TEMPORAL_ADDRESS={address}",
             f"                export {aws_environment(stack)}",
             f"  watch:        {kubectl} get nodes,nodeclaims   |   {nf} status --watch",
             f"  plan:         {nf} plan   (what the next planner pass would do, on $KUBECONFIG's cluster)",
             f"  delete one:   {kubectl} delete node {victim} --wait=false   ({why})",
             f"                {nf} status {victim}; {nf} force {victim} --reason demo"]
    pool = " --nodepool general" if victim == DO_NOT_DISRUPT_NODE else ""  # the bundled scenario's pool
    lines.append(f"  types:        {nf} instance-types{pool}   (what it may launch, read from EC2 as the worker does)")
    if shutil.which(PLUGIN_EXECUTABLE) is None:
        plugin = Path(command_path(PLUGIN_EXECUTABLE)).parent
        lines.append(f"  kubectl:      export PATH=$PWD/{plugin}:$PATH   (then `kubectl nodeflow status`)")
    if stack.temporal.ui_url:
        query = quote('NodeflowPhase="Draining"')
        lines.append(f"  Temporal UI:  {stack.temporal.ui_url}/namespaces/default/workflows")
        lines.append(f"                drains in progress: {stack.temporal.ui_url}/namespaces/default/workflows"
                     f"?query={query}")
    return lines


def _terminal_columns() -> int:
    import shutil

    return shutil.get_terminal_size(fallback=(100, 24)).columns


def fit_lines(text: str, columns: int) -> str:
    """Each line cut to the terminal's width (an ellipsis marks the cut): a wrapped line would break the redraw,
    which moves the cursor up one row per line."""
    width = max(columns - 1, 20)
    return "\n".join(line if len(line) <= width else line[:width - 1] + "…" for line in text.split("\n"))


class _LiveScreen:
    """Redraws the live view in place on a terminal, each line as wide as the terminal is now; elsewhere (a pipe,
    a log) prints it whole when it changes."""

    def __init__(self, out: Any, columns: Any = _terminal_columns) -> None:
        self.out = out
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.columns = columns
        self.lines = 0
        self.last = ""
        self.last_at = 0.0

    def show(self, text: str) -> None:
        if self.tty:
            if self.lines:
                self.out.write(f"\x1b[{self.lines}F\x1b[J")
            text = fit_lines(text, self.columns())
            self.out.write(text + "\n")
            self.lines = text.count("\n") + 1
        else:
            body = text.split("]", 1)[-1]
            if body == self.last and time.monotonic() - self.last_at < 30:
                return
            self.last, self.last_at = body, time.monotonic()
            self.out.write(text + "\n")
        self.out.flush()


async def _recent(client: Any, cache: dict[str, str], limit: int = 5) -> list[str]:
    """The latest disruption, termination, pre-spin and provisioning workflows, newest first, one line each."""
    from contracts.search_attributes import NODE, NODE_POOL, PHASE, REASON
    from starter.demo_report import describe_workflow

    rows = []
    query = ("WorkflowType = 'DisruptionWorkflow' OR WorkflowType = 'TerminationWorkflow' "
             "OR WorkflowType = 'SpotPrespinWorkflow' OR WorkflowType = 'ProvisioningWorkflow'")
    async for wf in client.list_workflows(query, limit=40):
        rows.append(wf)
    rows.sort(key=lambda wf: wf.start_time, reverse=True)
    out = []
    for wf in rows[:limit]:
        summary = cache.get(wf.run_id)
        if summary is None and wf.workflow_type != "TerminationWorkflow":
            desc = await client.get_workflow_handle(wf.id, run_id=wf.run_id).describe()
            summary = cache[wf.run_id] = (await desc.static_summary()) or ""
        attrs = wf.typed_search_attributes
        running = wf.status is not None and wf.status.name == "RUNNING"
        phase = attrs.get(PHASE) or ("" if running else (wf.status.name.title() if wf.status else ""))
        if wf.workflow_type == "DisruptionWorkflow" and not running:
            key = f"phase:{wf.run_id}"
            phase = cache[key] if key in cache else cache.setdefault(key, await _closed_disruption_phase(
                client, wf, phase))
        out.append(describe_workflow(wf.workflow_type, attrs.get(NODE) or "", attrs.get(REASON) or "", phase,
                                     summary or "", pool=attrs.get(NODE_POOL) or ""))
    return out


async def _closed_disruption_phase(client: Any, wf: Any, phase: str) -> str:
    """A finished disruption's phase as the live view shows it: Cancelled when `nodeflow cancel` cancelled the
    terminations it handed its nodes to (demo_report.disruption_phase_shown)."""
    from temporalio.client import WorkflowFailureError
    from temporalio.service import RPCError

    from contracts.disruption import DisruptionResult
    from contracts.search_attributes import PHASE
    from starter.demo_report import disruption_phase_shown

    if phase != "Succeeded":
        return phase
    try:
        result = await client.get_workflow_handle(wf.id, run_id=wf.run_id, result_type=DisruptionResult).result()
    except WorkflowFailureError:
        return phase
    phases = []
    for wid in result.terminations:
        try:
            desc = await client.get_workflow_handle(wid).describe()
        except RPCError:  # gone past retention: unknown, not cancelled
            phases.append("")
            continue
        phases.append(desc.typed_search_attributes.get(PHASE) or "")
    return disruption_phase_shown(phase, phases)


def _core(stack: Any) -> Any:
    from kubernetes import client as k8s

    return k8s.CoreV1Api(stack.sim.api_client())


def _nodes(core: Any) -> list[dict[str, Any]]:
    resp = core.list_node(_preload_content=False)
    return json.loads(resp.data).get("items") or []


def _claims(core: Any) -> list[dict[str, Any]]:
    from kubernetes import client as k8s

    return k8s.CustomObjectsApi(core.api_client).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]


def _states(nodes: list[dict[str, Any]]) -> Counter[str]:
    from starter.demo_report import node_states

    return node_states(nodes)


async def _in_flight(client: Any) -> Counter[str]:
    out: Counter[str] = Counter()
    async for wf in client.list_workflows("ExecutionStatus = 'Running'"):
        out[wf.workflow_type] += 1
    return out


def _interruptible(node: dict[str, Any]) -> bool:
    """A spot node no other method is taking down: not deleting, not tainted `karpenter.sh/disrupted`. A warning
    for a node already terminating only moves that termination's deadline (as it should), so the report would
    count no Interruption command for the demo's warning."""
    meta = node.get("metadata") or {}
    taints = (node.get("spec") or {}).get("taints") or []
    return ((meta.get("labels") or {}).get(L.CAPACITY_TYPE_LABEL) == "spot" and not meta.get("deletionTimestamp")
            and not any(t.get("key") == L.DISRUPTED_TAINT_KEY for t in taints))


def _inject_spot_interruption(stack: Any, core: Any) -> str | None:
    """Send an EventBridge 'EC2 Spot Instance Interruption Warning' for one spot node to the SQS queue: the oldest
    interruptible one (the scenario's own spot nodes, not one launched since), as the API server lists nodes by
    name."""
    nodes = sorted(_nodes(core), key=lambda n: ((n.get("metadata") or {}).get("creationTimestamp") or "",
                                                (n.get("metadata") or {}).get("name") or ""))
    for node in nodes:
        meta = node.get("metadata") or {}
        if not _interruptible(node):
            continue
        iid = instance_id_from_provider_id((node.get("spec") or {}).get("providerID"))
        if not iid:
            continue
        body = {"version": "0", "id": str(uuid.uuid4()), "detail-type": "EC2 Spot Instance Interruption Warning",
                "source": "aws.ec2", "account": "123456789012",
                "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "region": stack.o.region,
                "resources": [f"arn:aws:ec2:{stack.o.region}:123456789012:instance/{iid}"],
                "detail": {"instance-id": iid, "instance-action": "terminate"}}
        stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=json.dumps(body))
        return meta.get("name")
    return None


async def _final_report(stack: Any, core: Any, catalog: Any, cost_before: float, nodes_before: int,
                        settle: float, say: Any) -> dict[str, Any]:
    """Pause the planner, let in-flight work finish and pending pods be placed (bounded), then count what happened."""
    from client.planner_schedule import set_planner_paused
    from devstack.audit import leaked_instances, our_launches, our_launches_by_zone, stuck_finalizers
    from starter.demo_report import METHODS, pending_pods

    await set_planner_paused(stack.client, True, note="demo finished")
    settled_after = await _settle(stack, core, settle, say)
    unfinished = await _in_flight(stack.client)
    unfinished.pop("InterruptionPollerWorkflow", None)
    tally = await _tally(stack.client)
    nodes, claims = _nodes(core), _claims(core)
    instances = [i for r in stack.ec2.describe_instances()["Reservations"] for i in r["Instances"]]
    stats = stack.sim.stats()
    return {
        "commandsByMethod": {m: tally.commands_by_method.get(m, 0) for m in METHODS},
        "nodesTerminated": tally.nodes_terminated,
        "costPerHourBefore": cost_before,
        "costPerHourAfter": _cost(nodes, catalog),
        "pdbViolations": int(stats.get("pdbViolationsTotal", 0)),
        "leakedInstances": len(leaked_instances(instances, nodes, claims)),
        "stuckFinalizers": len(stuck_finalizers(nodes, claims)),
        "podsPendingAtEnd": len(pending_pods(_pods(core))),
        "nodesLaunched": our_launches(instances),
        "region": stack.o.region,
        "nodesLaunchedByZone": our_launches_by_zone(instances),
        "disruptionOutcomes": {m: dict(c) for m, c in sorted(tally.outcomes_by_method.items())},
        "terminatedByReason": dict(sorted(tally.terminated_by_reason.items())),
        "unfinishedWorkflows": sum(unfinished.values()),
        "nodesBefore": nodes_before,
        "nodesAfter": len(nodes),
        "evictions": stats.get("evictions", {}),
        "generatedAt": datetime.now(UTC).isoformat(timespec="seconds"),
        "settleSeconds": settle,  # the limit (--settle); what it took: settledAfterSeconds
        "settledAfterSeconds": settled_after,
    }


async def _settle(stack: Any, core: Any, settle: float, say: Any, poll: float = 3.0) -> float | None:
    """Until no workflow but the interruption poller runs and no pod is pending (the intake's next batch may still
    be opening), or `settle` seconds. Returns the seconds it took, None when the limit came first (the report's
    settledAfterSeconds; settleSeconds is the limit)."""
    from starter.demo_report import pending_pods

    start = time.monotonic()
    while time.monotonic() - start < settle:
        busy = await _in_flight(stack.client)
        busy.pop("InterruptionPollerWorkflow", None)
        pending = len(pending_pods(await asyncio.to_thread(_pods, core)))
        if not busy and not pending:
            return round(time.monotonic() - start, 1)
        say(f"settling: waiting for {sum(busy.values())} workflow(s) to finish and {pending} pending pod(s) ...")
        await asyncio.sleep(poll)
    return None


def _pods(core: Any) -> list[dict[str, Any]]:
    resp = core.list_pod_for_all_namespaces(_preload_content=False)
    return json.loads(resp.data).get("items") or []


async def _tally(client: Any) -> Any:
    """Every DisruptionWorkflow run (its method, final NodeflowPhase) and TerminationWorkflow run (reason,
    status) from Temporal's visibility, counted by demo_report.tally_workflows."""
    from activities.planning_runner import MEMO_METHOD
    from contracts.search_attributes import PHASE, REASON
    from starter.demo_report import tally_workflows

    disruptions: list[tuple[str, str]] = []
    async for wf in client.list_workflows("WorkflowType = 'DisruptionWorkflow'"):
        method = (await wf.memo()).get(MEMO_METHOD)  # runs started before the memo named it: the summary's 1st word
        if not method:
            desc = await client.get_workflow_handle(wf.id, run_id=wf.run_id).describe()
            method = (await desc.static_summary()) or ""
        disruptions.append((method, wf.typed_search_attributes.get(PHASE) or ""))
    terminations: list[tuple[str, str]] = []
    async for wf in client.list_workflows("WorkflowType = 'TerminationWorkflow'"):
        terminations.append((wf.typed_search_attributes.get(REASON) or "", wf.status.name if wf.status else ""))
    return tally_workflows(disruptions, terminations)


def _cost(nodes: list[dict[str, Any]], catalog: Any) -> float:
    from starter.demo_report import cost_per_hour

    return cost_per_hour(nodes, catalog)
