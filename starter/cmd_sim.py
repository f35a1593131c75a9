"""`nodeflow sim`: run the cluster simulator in the foreground, or `nodeflow sim generate` a snapshot.

    nodeflow sim -f cluster.yaml --kubeconfig-out /tmp/sim.kubeconfig [--port 6443] [--ec2-endpoint URL]
        [--scheduler-retry-after 90 | --scheduler-instant] [--scheduler-flush 60] [--seed 1]
    nodeflow sim generate --nodes 50 --pods-per-node 12 --seed 1 -o cluster.yaml
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from starter import sim_extra
from starter.output import CliError

# The simulated world (the [sim] extra, starter/sim_extra.py) is imported inside the command, after the check
# that it is installed; and, as in every command, our modules that load pydantic, temporalio or kubernetes are
# imported where they are used: `nodeflow --help` builds every command's parser (starter/cli.py) and takes
# 0.13 s without them, 0.83 s with them (farm-bench, median).


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sim", help="run the Kubernetes API simulator (or `sim generate` a cluster snapshot)",
        description="Run the cluster simulator in the foreground: a Kubernetes API server emulator with "
                    "kubelets, a scheduler, controllers and (with --ec2-endpoint) EC2-backed nodes.")
    parser.add_argument("-f", "--filename", metavar="SCENARIO", help="snapshot to load at start (YAML)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--ec2-endpoint", metavar="URL", help="EC2 endpoint (e.g. moto_server) for instance-backed "
                                                              "nodes")
    parser.add_argument("--time-scale", type=float, default=1.0,
                        help="multiplier for every simulated duration (0.01: a 30 s grace period takes 0.3 s)")
    parser.add_argument("--ready-delay", type=float, default=2.0,
                        help="seconds from instance running to Node registered, and again to Ready (default 2)")
    parser.add_argument("--kubeconfig-out", metavar="PATH", help="where to write the kubeconfig (required)")
    _scheduler_flags(parser)
    parser.set_defaults(func=run_sim)
    sub = parser.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")
    gen = sub.add_parser("generate", help="write a realistic cluster snapshot",
                         description="Write a realistic cluster snapshot (NodePools, NodeClaims, Nodes, ReplicaSets, "
                                     "DaemonSets, Pods, PDBs) as a multi-document YAML stream.")
    gen.add_argument("--nodes", type=int, required=True, help="number of nodes")
    gen.add_argument("--pods-per-node", type=int, required=True, help="pods per non-empty node (DaemonSets "
                                                                      "included)")
    gen.add_argument("--seed", type=int, default=0, help="random seed (same seed, same cluster)")
    gen.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    gen.set_defaults(func=run_generate)


def _scheduler_flags(parser: argparse.ArgumentParser) -> None:
    """The emulated kube-scheduler's timing (simulator/scheduler_timing.py); the defaults are a real cluster's."""
    timing = parser.add_argument_group("scheduler timing (simulated seconds; default: a real kube-scheduler's)")
    which = timing.add_mutually_exclusive_group()
    which.add_argument("--scheduler-retry-after", type=float, metavar="SECONDS",
                       help="retry an unschedulable pod only this long after its last attempt (no event requeue, "
                            "no backoff)")
    which.add_argument("--scheduler-instant", action="store_true",
                       help="bind a pending pod as soon as a node fits it (no backoff, no bind delay)")
    timing.add_argument("--scheduler-flush", type=float, metavar="SECONDS",
                        help="move a pod left in the unschedulable queue back after this long (default 300; "
                             "60 on kube-scheduler before v1.27)")
    timing.add_argument("--scheduler-bind-delay", type=float, metavar="SECONDS",
                        help="how long a bind takes (default 0.1)")
    timing.add_argument("--ready-jitter", type=float, default=0.25, metavar="FRACTION",
                        help="vary each node's ready delay and each pod's start delay by up to this fraction "
                             "(default 0.25)")
    timing.add_argument("--seed", type=int, default=0, help="seed of that jitter (default 0)")


def scheduler_timing(args: argparse.Namespace) -> Any:
    """The SchedulerTiming the flags ask for; CliError on a negative duration."""
    from pydantic import ValidationError

    from simulator.scheduler_timing import SchedulerTiming

    base = SchedulerTiming.instant() if args.scheduler_instant else SchedulerTiming()
    changes = {k: v for k, v in (("retry_after", args.scheduler_retry_after),
                                 ("unschedulable_flush", args.scheduler_flush),
                                 ("bind_delay", args.scheduler_bind_delay)) if v is not None}
    try:
        return SchedulerTiming.model_validate({**base.model_dump(), **changes})
    except ValidationError as exc:
        raise CliError(f"scheduler timing: {exc.errors()[0]['loc'][0]} must not be negative", 2) from exc


def run_generate(args: argparse.Namespace) -> int:
    sim_extra.require("sim generate", sim_extra.SIM_MODULES)
    import yaml

    from simulator.generate import generate_cluster

    if args.nodes < 0 or args.pods_per_node < 0:
        raise CliError("--nodes and --pods-per-node must not be negative", 2)
    objects = generate_cluster(args.nodes, args.pods_per_node, args.seed)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                yaml.dump_all(objects, fh, Dumper=dumper, sort_keys=False)
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror}") from exc
        print(f"wrote {len(objects)} objects to {args.output}", file=sys.stderr)
    else:
        yaml.dump_all(objects, sys.stdout, Dumper=dumper, sort_keys=False)
    return 0


def run_sim(args: argparse.Namespace) -> int:
    sim_extra.require("sim", sim_extra.SIM_MODULES)
    if not args.kubeconfig_out:
        raise CliError("--kubeconfig-out PATH is required: clients find the simulator through it", 2)
    if args.filename and not Path(args.filename).is_file():
        raise CliError(f"scenario {args.filename} not found", 2)
    if args.time_scale <= 0:
        raise CliError("--time-scale must be positive", 2)
    if not 0 <= args.ready_jitter < 1:
        raise CliError("--ready-jitter must be at least 0 and below 1", 2)
    timing = scheduler_timing(args)
    from simulator.scenario import ScenarioError
    from simulator.server import Simulator

    sim = Simulator(scenario=args.filename, ec2_endpoint=args.ec2_endpoint, time_scale=args.time_scale,
                    ready_delay=args.ready_delay, port=args.port, host=args.host,
                    kubeconfig_path=args.kubeconfig_out, scheduler_timing=timing, ready_jitter=args.ready_jitter,
                    seed=args.seed)
    try:
        sim.start()
    except ScenarioError as exc:
        raise CliError(str(exc), 2) from exc
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from exc
    stats = sim.stats()
    print(f"simulator listening on {sim.base_url} ({stats['nodes']['Ready']} ready nodes, "
          f"{stats['pods']['total']} pods); kubeconfig: {sim.kubeconfig_path}", flush=True)
    def _stop(signum: int, _frame: object) -> None:
        sim.stop()

    signal.signal(signal.SIGTERM, _stop)
    try:
        sim.wait()
    except KeyboardInterrupt:
        sim.stop()
    return 0
