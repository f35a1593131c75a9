"""`nodeflow instance-types`: the instance types a NodePool may launch, with Karpenter's capacity, allocatable,
labels and offerings, discovered from the region (gateways/instance_types.py; docs/contracts.md §8).

With no --nodepool/--nodeclass it needs no cluster: every type of the region, as a pool without requirements and
an AL2023 EC2NodeClass without a kubelet block would see them. AWS is reached as the worker reaches it (and
--catalog / NODEFLOW_CATALOG and --vm-memory-overhead-percent are the worker's settings too): the region
from --region, AWS_REGION or AWS_DEFAULT_REGION; EC2 (and the Pricing API) at --ec2-endpoint / NODEFLOW_EC2_ENDPOINT
when set (the demo prints its own), else boto3's (AWS_ENDPOINT_URL); credentials from boto3's standard chain, checked
before the first call so that their absence is one error naming what sets them.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from runtime.cloud_clients import RegionNotConfigured, ec2_client, pricing_client, resolve_region
from starter.live_cluster import load_catalog_arg, load_live_snapshot
from starter.output import CliError, add_output_flag, print_output, render_table
from starter.snapshot_source import live_kubeconfig

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).

EC2_ENDPOINT_ENV = "NODEFLOW_EC2_ENDPOINT"  # the worker's variable for --ec2-endpoint (worker.py)
OVERHEAD_ENV = "NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT"  # the worker's variable for --vm-memory-overhead-percent
CREDENTIAL_SOURCES = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or a role (IRSA, instance profile)"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "instance-types",
        help="instance types a NodePool may launch: capacity, allocatable, labels, offerings (cheapest first)",
        description="Discover the region's instance types, offerings and prices as Karpenter's AWS provider does, "
                    "and show what a NodePool under an EC2NodeClass may launch.",
    )
    p.add_argument("--region", help="AWS region (default: AWS_REGION, then AWS_DEFAULT_REGION)")
    p.add_argument("--ec2-endpoint", default=os.environ.get(EC2_ENDPOINT_ENV), metavar="URL",
                   help=f"EC2 and Pricing API endpoint, as the worker's flag (default: ${EC2_ENDPOINT_ENV}, else "
                        "boto3's, e.g. AWS_ENDPOINT_URL)")
    p.add_argument("--nodepool", metavar="NAME", help="only what this NodePool's requirements allow")
    p.add_argument("--nodeclass", metavar="NAME",
                   help="allocatable and zones under this EC2NodeClass (default: the NodePool's nodeClassRef)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("-f", "--filename", metavar="SNAPSHOT",
                     help="read NodePools and EC2NodeClasses from this snapshot (with --nodepool/--nodeclass)")
    src.add_argument("--kubeconfig", metavar="FILE",
                     help="read them from this cluster (without -f: $KUBECONFIG, then ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (live cluster)")
    p.add_argument("--catalog", metavar="FILE", default=os.environ.get("NODEFLOW_CATALOG"),
                   help="an InstanceTypeCatalog YAML instead of discovering (offline; default: $NODEFLOW_CATALOG, "
                        "as the worker)")
    p.add_argument("--vm-memory-overhead-percent", type=float, metavar="FRACTION",
                   default=float(os.environ.get(OVERHEAD_ENV, "0.075")),
                   help=f"share of an instance's memory the hypervisor keeps, for allocatable, as the worker's flag "
                        f"(default: ${OVERHEAD_ENV}, else 0.075)")
    add_output_flag(p)
    p.set_defaults(func=run)


def _progress(message: str) -> None:
    print(f"instance-types: {message} ...", file=sys.stderr, flush=True)


def _require_credentials() -> None:
    """One error naming what provides credentials, before any call: boto3's own failure came once as a logged
    warning and again as the CLI's error, in two phrasings, naming neither the variables nor the demo's."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        found = boto3.Session().get_credentials()
    except BotoCoreError as exc:  # e.g. AWS_PROFILE names no profile
        raise CliError(f"AWS credentials: {exc} (set {CREDENTIAL_SOURCES})") from None
    if found is None:
        raise CliError(f"no AWS credentials: set {CREDENTIAL_SOURCES}; beside `nodeflow demo`, export the "
                       "environment it printed")


class _Held(logging.Handler):
    """The provider's log records during one refresh, shown only when it succeeds: on a failure the CLI's error
    says it once."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _refresh(provider: Any) -> bool:
    """provider.refresh(), its warnings (a price fallback) printed as progress after a success, dropped after a
    failure (the CLI's error carries provider.last_error)."""
    logger, held = logging.getLogger(type(provider).__module__), _Held()
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(held)
    try:
        ok = bool(provider.refresh())
    finally:
        logger.removeHandler(held)
        logger.propagate = propagate
    for record in held.records if ok else ():
        _progress(f"warning: {record.getMessage()}")
    return ok


def _discover(region_flag: str | None, endpoint: str | None, overhead: float) -> Any:
    """The region's catalog, read as the worker reads it (one refresh, progress on stderr)."""
    from gateways.instance_types import InstanceTypeProvider

    try:
        region = resolve_region(region_flag)
    except RegionNotConfigured as exc:
        raise CliError(str(exc), 2) from None
    _require_credentials()
    provider = InstanceTypeProvider(ec2_client(region, endpoint), pricing_client(region, endpoint),
                                    overhead_percent=overhead, progress=_progress)
    if not _refresh(provider):
        where = f" at {endpoint}" if endpoint else ""
        hint = "" if endpoint else f" (another endpoint: --ec2-endpoint or {EC2_ENDPOINT_ENV})"
        raise CliError(f"cannot discover the instance types of {region}{where}: {provider.last_error}{hint}")
    _progress(f"{len(provider.catalog().instance_types)} types, on-demand prices from {provider.price_source}")
    return provider.catalog()


def _cluster_objects(args: argparse.Namespace) -> Any:
    """The snapshot holding the NodePool / EC2NodeClass asked for (a file, or the live cluster)."""
    from api.snapshot import SnapshotError, load_snapshot

    if args.filename:
        try:
            return load_snapshot(args.filename)
        except (OSError, SnapshotError) as exc:
            raise CliError(f"{args.filename}: {exc}") from exc
    return load_live_snapshot(live_kubeconfig(args), args.context)[0]


def _pool_and_class(args: argparse.Namespace) -> tuple[list[dict[str, Any]], Any, set[str] | None]:
    """(pool requirements, EC2NodeClass model or None, zones of its subnets or None for every zone)."""
    if not args.nodepool and not args.nodeclass:
        return [], None, None
    from planning.cluster import parse_pool

    snap = _cluster_objects(args)
    requirements: list[dict[str, Any]] = []
    class_name = args.nodeclass
    if args.nodepool:
        pool = next((parse_pool(p) for p in snap.node_pools if p.metadata.name == args.nodepool), None)
        if pool is None:
            raise CliError(f"NodePool {args.nodepool!r} not found", 1)
        requirements = list(pool.requirements)
        class_name = class_name or pool.node_class
    node_class = next((c for c in snap.node_classes if c.metadata.name == class_name), None)
    if class_name and node_class is None:
        raise CliError(f"EC2NodeClass {class_name!r} not found", 1)
    zones = {s.zone for s in (node_class.status.subnets or ()) if s.zone} if node_class is not None else set()
    if node_class is not None and not zones:
        _progress(f"EC2NodeClass {class_name} has no resolved subnets: every zone of the region shown")
    return requirements, node_class, zones or None


def _table(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        offs = [o for o in r["offerings"] if o["available"]]
        cheapest = offs[0] if offs else None
        out.append([r["name"], r["capacity"]["cpu"], r["capacity"]["memory"], r["allocatable"]["cpu"],
                    r["allocatable"]["memory"], r["allocatable"]["pods"],
                    r["labels"].get("kubernetes.io/arch", ""),
                    f"{cheapest['price']:.4f} {cheapest['capacityType']} {cheapest['zone']}" if cheapest else None,
                    len({o["zone"] for o in r["offerings"]})])
    return render_table(["NAME", "CPU", "MEMORY", "ALLOC CPU", "ALLOC MEMORY", "PODS", "ARCH", "CHEAPEST ($/h)",
                         "ZONES"], out)


def run(args: argparse.Namespace) -> int:
    from planning.pricing.instance_type_rows import instance_type_rows

    requirements, node_class, zones = _pool_and_class(args)
    catalog = load_catalog_arg(args.catalog) or _discover(args.region, args.ec2_endpoint,
                                                          args.vm_memory_overhead_percent)
    rows = instance_type_rows(catalog, requirements, node_class, zones)
    print_output(rows, args.output, _table)
    return 0
