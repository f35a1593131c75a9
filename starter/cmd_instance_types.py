"""`nodeflow instance-types`: the instance types a NodePool may launch, with Karpenter's capacity, allocatable,
labels and offerings, discovered from the region (activities/instance_types.py; docs/contracts.md §8).

With no --nodepool/--nodeclass it needs no cluster: every type of the region, as a pool without requirements and
an AL2023 EC2NodeClass without a kubelet block would see them. AWS comes from the standard environment (region from
--region, AWS_REGION or AWS_DEFAULT_REGION; AWS_ENDPOINT_URL; credentials), as every boto3 tool reads it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from starter.output import CliError, add_output_flag, print_output, render_table


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "instance-types",
        help="instance types a NodePool may launch: capacity, allocatable, labels, offerings (cheapest first)",
        description="Discover the region's instance types, offerings and prices as Karpenter's AWS provider does, "
                    "and show what a NodePool under an EC2NodeClass may launch.",
    )
    p.add_argument("--region", help="AWS region (default: AWS_REGION, then AWS_DEFAULT_REGION)")
    p.add_argument("--nodepool", metavar="NAME", help="only what this NodePool's requirements allow")
    p.add_argument("--nodeclass", metavar="NAME",
                   help="allocatable and zones under this EC2NodeClass (default: the NodePool's nodeClassRef)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("-f", "--filename", metavar="SNAPSHOT",
                     help="read NodePools and EC2NodeClasses from this snapshot (with --nodepool/--nodeclass)")
    src.add_argument("--kubeconfig", metavar="FILE",
                     help="read them from this cluster (without -f: $KUBECONFIG, then ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (live cluster)")
    p.add_argument("--catalog", metavar="FILE", help="an InstanceTypeCatalog YAML instead of discovering (offline)")
    add_output_flag(p)
    p.set_defaults(func=run)


def _progress(message: str) -> None:
    print(f"instance-types: {message} ...", file=sys.stderr, flush=True)


def _discover(region_flag: str | None) -> Any:
    """The region's catalog, read through boto3's standard environment (one refresh, progress on stderr)."""
    from activities.instance_types import InstanceTypeProvider
    from runtime.cloud_clients import RegionNotConfigured, ec2_client, pricing_client, resolve_region

    try:
        region = resolve_region(region_flag)
    except RegionNotConfigured as exc:
        raise CliError(str(exc), 2) from None
    provider = InstanceTypeProvider(ec2_client(region, None), pricing_client(region, None), progress=_progress)
    if not provider.refresh():
        raise CliError(f"cannot discover the instance types of {region}: {provider.last_error}")
    _progress(f"{len(provider.catalog().instance_types)} types, on-demand prices from {provider.price_source}")
    return provider.catalog()


def _cluster_objects(args: argparse.Namespace) -> Any:
    """The snapshot holding the NodePool / EC2NodeClass asked for (a file, or the live cluster)."""
    from api.snapshot import SnapshotError, load_snapshot
    from starter.live_cluster import load_live_snapshot
    from starter.snapshot_source import live_kubeconfig

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
    from planning.instance_type_rows import instance_type_rows
    from starter.live_cluster import load_catalog_arg

    requirements, node_class, zones = _pool_and_class(args)
    catalog = load_catalog_arg(args.catalog) or _discover(args.region)
    rows = instance_type_rows(catalog, requirements, node_class, zones)
    print_output(rows, args.output, _table)
    return 0
