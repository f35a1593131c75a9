"""Soak: an hour of churn in the demo world, with the worker as a real process (not part of the test run).

    .venv/bin/python -m bench.soak --minutes 60 [--seed N] [--json] [--sample-seconds 30] [--workdir DIR]
                                    [--slow-scheduler SECONDS] [--replicas 2 --kill-leader-every MINUTES]
                                    [--cloud-faults RATE [--credential-window SECONDS] [--credential-every MINUTES]]

The demo's stack (bench/soak_world.py) runs while a seeded driver (bench/soak_churn.py) scales Deployments up
and down, changes NodePool templates (drift), keeps one pool's expireAfter short (expiration), sends spot
interruption warnings to SQS and deletes nodes, with the simulator failing 1% of API requests (429/500/409).
Every --sample-seconds it records the worker's RSS, the history of the long-running workflows, pods pending,
nodes and workflows running (bench/soak_sample.py). Then churn, faults and the planner stop, the cluster
converges (bounded), in-flight work finishes, and the safety counts are taken (devstack/audit.py), with the
simulator's count of pods left Pending longer than a node's launch and readiness plus the scheduler's delay
(bench/soak_world.py `pending_bound_seconds`). The emulated kube-scheduler has a real one's timing; with
--slow-scheduler it retries a pod that found no node only SECONDS of wall time later (the slow
scheduler a real control plane showed: docs/configuration.md, `nodeflow sim`).
With --replicas the worker runs as a Deployment of that many replicas under leader election, and with
--kill-leader-every the Lease holder is SIGKILLed on that period and started again as a kubelet would
(bench/soak_replicas.py). With --cloud-faults the EC2 stand-in throttles that share of the worker's EC2 calls and
refuses launches and terminations for --credential-window seconds every 15 minutes (bench/soak_cloud.py).
Progress goes to stderr; the summary (or with --json one JSON document) to stdout. Exit 1 when a safety count is
not 0, pods are still pending, or the cluster did not converge.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from bench.soak_churn import Churn, retry
from bench.soak_cloud import CloudFaultPlan
from bench.soak_replicas import RESTART_DELAY, Replicas, ReplicaWorld
from bench.soak_sample import LONG_RUNNING, cluster_counts, rss_mib, running, sample
from bench.soak_summary import (
    history_figures,
    late_pods,
    rss_figures,
    rss_growth_by_life,
    safety_counts,
    verdict,
    warmup_seconds,
)
from bench.soak_world import World, WorldOptions
from client.planner_schedule import set_planner_paused
from contracts.search_attributes import REASON
from contracts.termination import TerminationInput
from devstack import audit

FAULT_RATE = 0.01
BUSY = ("TerminationWorkflow", "DisruptionWorkflow", "ProvisioningWorkflow", "SpotPrespinWorkflow")


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _progress(row: dict[str, Any]) -> str:
    poller = row.get("poller") or {}
    busy = {k.removesuffix("Workflow"): v for k, v in row["running"].items() if k in BUSY}
    return (f"t={row['t']:.0f}s rss={row['workerRssMiB']}MiB nodes={row['nodes']} pending={row['podsPending']} "
            f"poller={poller.get('events', '-')} events running={busy}")


async def churn_phase(world: World, churn: Churn, seconds: float, every: float, machines: dict[str, str],
                      drivers: tuple[Any, ...] = ()) -> tuple[list[dict[str, Any]], float]:
    """Churn until `seconds` are up, sampling every `every` seconds; `drivers` (the replicas' supervisor and leader
    kills, the cloud fault plan) step beside the churn. Returns the samples and the start time."""
    assert world.client is not None and world.sim is not None and world.worker is not None
    api, started = world.sim.api_client(), time.monotonic()
    samples: list[dict[str, Any]] = []
    churn.start(started)
    for d in drivers:
        await asyncio.to_thread(d.begin, started)
    next_sample = started
    while (now := time.monotonic()) < started + seconds and world.worker_alive():
        for step in (churn.step, *(d.step for d in drivers)):
            for line in await asyncio.to_thread(step, now):
                say(line)
        if now >= next_sample:
            samples.append(await sample(world.client, api, world.worker.pid, started, machines))
            if isinstance(world, ReplicaWorld):
                samples[-1]["rssByLife"] = {life: rss_mib(pid) for life, pid in world.replicas.pids().items()}
            say(_progress(samples[-1]))
            next_sample += every
        await asyncio.sleep(1.0)
    return samples, started


async def converge(world: World, machines: dict[str, str], timeout: float) -> tuple[bool, float]:
    """Until no pod is pending, no node deleting and no termination, disruption or provisioning runs (twice in a
    row), at most `timeout` seconds; returns whether it did and how long it took."""
    assert world.client is not None and world.sim is not None
    api, t0, calm = world.sim.api_client(), time.monotonic(), 0
    while time.monotonic() - t0 < timeout and world.worker_alive():
        counts = await asyncio.to_thread(cluster_counts, api, machines)
        busy = {k: v for k, v in (await running(world.client)).items() if k in BUSY}
        calm = calm + 1 if not counts["podsPending"] and not counts["nodesDeleting"] and not busy else 0
        if calm >= 2:
            return True, round(time.monotonic() - t0, 1)
        say(f"converging: pending={counts['podsPending']} deleting={counts['nodesDeleting']} running={busy}")
        await asyncio.sleep(5.0)
    return False, round(time.monotonic() - t0, 1)


async def settle(world: World, timeout: float) -> list[str]:
    """Wait (bounded) for every workflow but the poller to finish; returns those still running."""
    assert world.client is not None
    deadline = time.monotonic() + timeout
    while True:
        left = [f"{w.workflow_type} {w.id}" async for w in world.client.list_workflows("ExecutionStatus='Running'")
                if w.workflow_type != "InterruptionPollerWorkflow"]
        if not left or time.monotonic() > deadline:
            return sorted(left)
        await asyncio.sleep(2.0)


def machine_of(machines: dict[str, str]) -> Any:
    def which(inp: TerminationInput) -> str:
        if inp.provider_id:
            return inp.provider_id.rsplit("/", 1)[-1]
        return (machines.get(f"node/{inp.node_name}") or machines.get(f"nodeclaim/{inp.node_claim_name}")
                or f"unknown node {inp.node_name} claim {inp.node_claim_name}")
    return which


def _instances(ec2: Any) -> list[dict[str, Any]]:
    return [i for page in ec2.get_paginator("describe_instances").paginate()
            for r in page["Reservations"] for i in r["Instances"]]


async def safety(world: World, machines: dict[str, str]) -> dict[str, Any]:
    """The safety findings (offenders listed) at the end of the run."""
    assert world.client is not None and world.sim is not None
    api = world.sim.api_client()
    nodes = api.sanitize_for_serialization(retry(k8s.CoreV1Api(api).list_node).items)
    claims = retry(k8s.CustomObjectsApi(api).list_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims")["items"]
    instances = await asyncio.to_thread(_instances, world.ec2)
    per_machine = await audit.termination_runs_per_machine(world.client, machine_of(machines))
    stats = world.sim.stats()
    return {"pdbViolations": sum(audit.pdb_violations(stats).values()),
            "pdbViolationsOnGraceDeadlinePath": (stats.get("pdbViolations") or {}).get("grace-deadline", 0),
            "leakedInstances": audit.leaked_instances(instances, nodes, claims),
            "stuckFinalizers": audit.stuck_finalizers(nodes, claims),
            "duplicateLaunches": audit.duplicate_launches(instances),
            "duplicateTerminations": {m: k for m, k in per_machine.items() if k > 1},
            "failedWorkflows": await audit.bad_workflows(world.client),
            "workerExits": worker_exits(world),
            "podsPendingPastBound": late_pods(world.sim.world.ledger),
            "launchedByNodeflow": audit.our_launches(instances), "terminatedMachines": len(per_machine)}


def worker_exits(world: World) -> int:
    """Worker exits nobody asked for: replicas that fell over on their own (a leader kill is not one), or the one
    worker gone."""
    if isinstance(world, ReplicaWorld):
        return len(world.replicas.log.unexpected_exits)
    return 0 if world.worker_alive() else 1


async def workflow_figures(world: World) -> dict[str, Any]:
    """Closed and open runs by type, the longest history of each type, terminations by reason."""
    assert world.client is not None
    by_type: Counter[str] = Counter()
    longest: dict[str, int] = {}
    reasons: Counter[str] = Counter()
    async for w in world.client.list_workflows():
        by_type[w.workflow_type] += 1
        longest[w.workflow_type] = max(longest.get(w.workflow_type, 0), w.history_length)
        if w.workflow_type == "TerminationWorkflow":
            reasons[w.typed_search_attributes.get(REASON) or "unknown"] += 1
    return {"runsByType": dict(by_type), "maxHistoryEventsByType": longest, "terminationsByReason": dict(reasons)}


async def finish(world: World, churn: Churn, machines: dict[str, str], timeout: float,
                 cloud: CloudFaultPlan | None = None) -> dict[str, Any]:
    """Stop churn, faults and voluntary disruption (the planner paused: consolidation would go on finding
    cheaper nodes); converge (pending pods still get nodes, in-flight work finishes); settle; count."""
    assert world.sim is not None and world.client is not None
    await asyncio.to_thread(churn.quiesce)
    world.sim.inject_faults(rate=0.0)
    if cloud is not None:
        await asyncio.to_thread(cloud.stop)
    if isinstance(world, ReplicaWorld):
        await restore_replicas(world.replicas)
    await set_planner_paused(world.client, True, note="soak: end of run")
    say("churn stopped, faults off, planner paused: converging ...")
    converged, took = await converge(world, machines, timeout)
    left = await settle(world, 120.0)
    say(f"converged={converged} in {took}s; still running: {left}")
    end = await asyncio.to_thread(cluster_counts, world.sim.api_client(), machines)
    return {"converged": converged, "convergeSeconds": took, "unfinishedWorkflows": len(left), "unfinished": left,
            "podsPendingAtEnd": end["podsPending"], "nodesAtEnd": end["nodes"],
            "safety": await safety(world, machines), "workflows": await workflow_figures(world)}


async def restore_replicas(replicas: Replicas) -> None:
    """No more leader kills; a replica killed last comes back (after the kubelet's delay) and the Lease is held."""
    replicas.kill_every = None
    deadline = time.monotonic() + RESTART_DELAY + 60.0
    while time.monotonic() < deadline:
        for line in await asyncio.to_thread(replicas.step, time.monotonic()):
            say(line)
        if all(r.alive() for r in replicas.all.values()) and replicas.log.pending_kill is None:
            return
        await asyncio.sleep(1.0)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="nodeflow-soak-"))
    options = WorldOptions(workdir=workdir, scheduler_retry_seconds=args.slow_scheduler,
                           outage_allowance=outage_allowance(args))
    world = ReplicaWorld(options)
    world.replicas = Replicas(world, args.replicas, _minutes(args.kill_leader_every))
    say(f"starting the stack (logs in {workdir}) ...")
    await world.start()
    try:
        assert world.sim is not None
        say(f"up; worker pid {world.worker.pid if world.worker else '-'}, {args.replicas} replica(s)")
        churn = Churn(world.sim.api_client(), world.sqs, world.queue_url, random.Random(args.seed))
        world.sim.inject_faults(rate=FAULT_RATE, codes=(429, 500, 409))
        cloud = (CloudFaultPlan(world.moto.endpoint, rate=args.cloud_faults, window=args.credential_window,
                                rotate_every=args.credential_every * 60, seed=args.seed)
                 if args.cloud_faults is not None else None)
        drivers = tuple(d for d in (world.replicas, cloud) if d is not None)
        machines: dict[str, str] = {}
        seconds = args.minutes * 60
        samples, _ = await churn_phase(world, churn, seconds, args.sample_seconds, machines, drivers)
        end = await finish(world, churn, machines, max(300.0, seconds / 6), cloud)
        extra = {**(cloud.figures() if cloud else {}), **world.replicas.figures()}
        return report(args, samples, churn, end, world.sim.stats(), workdir, extra)
    finally:
        world.stop()


LEADER_GAP = 20.0  # seconds without a leader after a SIGKILL: the lease (15 s), a retry period (2 s) and a margin


def outage_allowance(args: argparse.Namespace) -> float:
    """How long (wall seconds) the run itself can keep every launch off, added to the bound past which a pending
    pod counts: a credential window refuses every launch for its length, and a leader kill leaves the pending-pod
    intake (a leader's controller) without a leader for up to LEADER_GAP; the two can meet. A pod created in such a
    gap waits that much longer through no fault of nodeflow's; once it ends, it must get capacity in the usual
    bound."""
    window = args.credential_window if args.cloud_faults is not None else 0.0
    return window + (LEADER_GAP if args.kill_leader_every is not None else 0.0)


def _minutes(value: float | None) -> float | None:
    return None if value is None else value * 60


def report(args: argparse.Namespace, samples: list[dict[str, Any]], churn: Churn, end: dict[str, Any],
           stats: dict[str, Any], workdir: Path, extra: dict[str, Any]) -> dict[str, Any]:
    counts = safety_counts(end["safety"])
    problems = verdict(counts, end["podsPendingAtEnd"], end["converged"], end["unfinishedWorkflows"])
    return {"minutes": args.minutes, "seed": args.seed, "sampleSeconds": args.sample_seconds,
            "passed": not problems, "problems": problems, "safety": counts,
            "workerRss": rss_figures(samples, warmup_seconds(args.minutes * 60)),
            "rssGrowthByLife": rss_growth_by_life(samples, warmup_seconds(args.minutes * 60)),
            "replicas": args.replicas, "killLeaderEveryMinutes": args.kill_leader_every, **extra,
            "longRunningHistory": history_figures(samples, tuple(LONG_RUNNING)),
            "churn": dict(churn.counts), "faultsInjected": sum((stats.get("faultsInjected") or {}).values()),
            "slowSchedulerSeconds": args.slow_scheduler,
            "podPendingLongestSeconds": stats.get("podPendingLongestSeconds"),
            "pendingBoundSeconds": stats.get("pendingBoundSeconds"),
            **{k: v for k, v in end.items() if k != "safety"}, "safetyDetail": end["safety"],
            "samples": samples, "workdir": str(workdir)}


def render(r: dict[str, Any]) -> str:
    rss, hist = r["workerRss"], r["longRunningHistory"]
    outcome = "PASSED" if r["passed"] else f"FAILED {r['problems']}"
    lines = [f"soak {r['minutes']} min, seed {r['seed']}: {outcome}",
             f"churn: {r['churn']}, {r['faultsInjected']} API faults injected",
             f"worker RSS: {rss.get('atWarmupMiB')} MiB after warm-up, {rss.get('endMiB')} MiB at the end, "
             f"peak {rss.get('peakMiB')}, growth {rss.get('growthMiBPerHour')} MiB/h",
             *(f"history {k}: max {v['maxEvents']} events / {v['maxBytes']} B over {v['runsSeen']} run(s)"
               for k, v in hist.items()),
             f"max history events by type: {r['workflows']['maxHistoryEventsByType']}",
             f"replicas: {r['replicas']}; leader kills {r['leaderKills']} (every {r['killLeaderEveryMinutes']} min), "
             f"leader changes {r['leaderChanges']}, takeover after a kill {r['takeoverSeconds']} s; worker exits "
             f"on their own {r['unexpectedExits'] or 0}; RSS growth by life {r['rssGrowthByLife']} MiB/h",
             f"cloud: {r.get('cloudFaultsInjected', 'no faults')} injected over {r.get('ec2Calls', '-')} EC2 calls, "
             f"{r.get('credentialRotations', 0)} credential windows; {r['cloudRetries']:.0f} EC2 requests sent again "
             f"by the workers (botocore's retries and the gateway's)",
             f"safety: {r['safety']}",
             f"pending: {r['safety'].get('podsPendingPastBound')} pods waited unbound past "
             f"{r['pendingBoundSeconds']} s, the longest {r['podPendingLongestSeconds']} s (scheduler: "
             + (f"slow, retries after {r['slowSchedulerSeconds']} s)" if r['slowSchedulerSeconds'] is not None
                else "a real kube-scheduler's timing)"),
             f"converged {r['converged']} in {r['convergeSeconds']} s; pods pending at end {r['podsPendingAtEnd']}; "
             f"nodes at end {r['nodesAtEnd']}; terminations by reason {r['workflows']['terminationsByReason']}"]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--sample-seconds", type=float, default=30.0)
    p.add_argument("--workdir", type=Path, help="logs, kubeconfig, Temporal db (default: a new temp dir)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of a report")
    p.add_argument("--slow-scheduler", type=float, metavar="SECONDS",
                   help="the emulated kube-scheduler retries a pod that found no node only SECONDS of wall time "
                        "later (default: a real kube-scheduler's backoff and queues)")
    p.add_argument("--replicas", type=int, default=1,
                   help="worker replicas under leader election, as deploy/ runs them (default 1)")
    p.add_argument("--kill-leader-every", type=float, metavar="MINUTES",
                   help="SIGKILL the replica holding the controllers' Lease on this period (needs --replicas 2+)")
    p.add_argument("--cloud-faults", type=float, metavar="RATE",
                   help="throttle this share (0..1) of the worker's EC2 calls, and refuse launches and terminations "
                        "for --credential-window seconds every 15 minutes")
    p.add_argument("--credential-window", type=float, default=60.0, metavar="SECONDS",
                   help="how long each credential window refuses launches and terminations (default 60)")
    p.add_argument("--credential-every", type=float, default=15.0, metavar="MINUTES",
                   help="time between credential windows (default 15)")
    args = p.parse_args(argv)
    if args.slow_scheduler is not None and args.slow_scheduler < 0:
        p.error("--slow-scheduler: SECONDS must not be negative")
    if args.replicas < 1:
        p.error("--replicas: at least 1")
    if args.kill_leader_every is not None and (args.replicas < 2 or args.kill_leader_every <= 0):
        p.error("--kill-leader-every: needs --replicas 2 or more and a positive period (nothing would take over)")
    if args.cloud_faults is not None and not 0.0 <= args.cloud_faults <= 1.0:
        p.error("--cloud-faults: RATE must be within 0..1")
    if args.credential_window >= args.credential_every * 60:
        p.error("--credential-window must be shorter than --credential-every")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = asyncio.run(run(args))
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
