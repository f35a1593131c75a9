"""`nodeflow validate -f FILE`: every problem of the NodePools, NodeClaims and EC2NodeClasses in a file, before a
cluster sees them."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any

from api.suggest import did_you_mean
from runtime.kube_version import kubeconfig_version_problem
from starter.output import CliError
from starter.snapshot_source import require_pools_or_nodes
from starter.validate_policies import policy_set_lines

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).

# besides NodePools and Nodes, the kinds a file may hold alone for `validate` (manifests, not a snapshot)
VALIDATED_KINDS = ("NodeClaim", "EC2NodeClass", "InstanceTypeCatalog", "DisruptionPolicy", "NodeOverlay",
                   "FleetRollout", "CapacityBuffer")
# the kinds of the API groups whose misspelt kinds validate points out (other groups' kinds are not known here)
KINDS_BY_GROUP: dict[str, tuple[str, ...]] = {
    "karpenter.sh": ("NodePool", "NodeClaim", "NodeOverlay"),
    "karpenter.k8s.aws": ("EC2NodeClass",),
    "nodeflow.dev": ("InstanceTypeCatalog", "DisruptionPolicy", "FleetRollout"),
    "autoscaling.x-k8s.io": ("CapacityBuffer",),
}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check NodePool / NodeClaim / EC2NodeClass manifests against Karpenter v1's rules",
        description="Print every problem (field path and rule) of the NodePool, NodeClaim and EC2NodeClass documents "
        "in the files; other objects are checked for kind, apiVersion and metadata.name. Exit 1 when any problem.",
    )
    p.add_argument("-f", "--filename", action="append", required=True, metavar="FILE",
                   help="YAML/JSON file (a stream or a kind: List) or a directory of them (its .json, .yaml and "
                        ".yml files, sorted, as kubectl reads one); repeatable; '-' reads standard input")
    p.add_argument("-R", "--recursive", action="store_true",
                   help="also the files in the directories' subdirectories (kubectl's -R)")
    p.add_argument("--kubeconfig", metavar="FILE",
                   help="also check that this cluster's API server is a Kubernetes version nodeflow supports")
    p.set_defaults(func=run)


def cluster_problem(kubeconfig: str | None) -> str | None:
    """With --kubeconfig: one line when the cluster's Kubernetes is older than nodeflow's CRDs need (or its
    version cannot be read), instead of a CRD compile error at install (api/kube_version.py)."""
    if not kubeconfig:
        return None
    try:
        return kubeconfig_version_problem(kubeconfig)
    except Exception as exc:  # unreachable, refused, a kubeconfig that does not load: one line too
        first = str(exc).splitlines()[0] if str(exc) else repr(exc)
        return f"{kubeconfig}: could not read the API server's version: {first}"


MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")  # the files kubectl reads from a directory given to -f


def manifest_files(paths: Iterable[str], recursive: bool = False) -> list[str]:
    """Each -f path as kubectl takes it: a file (or '-') as given; a directory as its .json/.yaml/.yml files in
    name order, those of subdirectories too with -R (a directory without any is an error, as in kubectl)."""
    from pathlib import Path

    out: list[str] = []
    for path in paths:
        root = Path(path)
        if path == "-" or not root.is_dir():
            out.append(path)
            continue
        found = sorted(p for p in (root.rglob("*") if recursive else root.iterdir())
                       if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES)
        if not found:
            deeper = "" if recursive else " (-R reads its subdirectories too)"
            raise CliError(f"{path}: no {', '.join(MANIFEST_SUFFIXES)} files in this directory{deeper}")
        out += [str(p) for p in found]
    return out


def kind_problem(kind: str, api_version: str) -> str | None:
    """A kind the API group of Karpenter or nodeflow does not have (e.g. `NodePools`), with the closest one."""
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    kinds = KINDS_BY_GROUP.get(group)
    if kinds is None or kind in kinds:
        return None
    return f"kind: {kind!r} is not a kind of {group} ({', '.join(kinds)}){did_you_mean(kind, kinds)}"


def problems_of(obj: Any) -> tuple[list[str], list[str]]:
    """(problems, warnings) of one object."""
    from pydantic import ValidationError

    from api.catalog import CATALOG_KIND, InstanceTypeCatalog
    from api.ec2nodeclass_validation import validate_ec2nodeclass
    from api.validation import nodepool_warnings, validate_nodeclaim, validate_nodepool

    if not isinstance(obj, dict):
        return [f"expected a Kubernetes object (a mapping), got {type(obj).__name__}"], []
    kind = obj.get("kind")
    if kind == "NodePool":
        return validate_nodepool(obj), nodepool_warnings(obj)
    if kind == "NodeClaim":
        return validate_nodeclaim(obj), []
    if kind == "EC2NodeClass":
        return validate_ec2nodeclass(obj), []
    if kind == "DisruptionPolicy":
        from api.disruption_policy_validation import validate_disruption_policy

        return validate_disruption_policy(obj), []
    if kind == "NodeOverlay":
        from api.node_overlay import node_overlay_warnings, validate_node_overlay

        return validate_node_overlay(obj), node_overlay_warnings(obj)
    if kind == "CapacityBuffer":
        from api.capacity_buffer import validate_capacity_buffer

        return validate_capacity_buffer(obj), []
    problems = []
    if not isinstance(kind, str) or not kind:
        problems.append("kind: required field is missing")
    if not isinstance(obj.get("apiVersion"), str) or not obj.get("apiVersion"):
        problems.append("apiVersion: required field is missing")
    elif isinstance(kind, str) and kind and (problem := kind_problem(kind, obj["apiVersion"])):
        problems.append(problem)
    if kind in (CATALOG_KIND, "FleetRollout"):
        from api.fleet import FleetRollout

        try:
            (InstanceTypeCatalog if kind == CATALOG_KIND else FleetRollout).model_validate(obj)
        except ValidationError as exc:
            problems += [f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return problems, []
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        problems.append("metadata.name: required field is missing")
    return problems, []


def _kinds(objects: Iterable[Any]) -> Counter[str]:
    return Counter(o["kind"] if isinstance(o, dict) and isinstance(o.get("kind"), str) and o["kind"]
                   else "object with no kind" for o in objects)


def run(args: argparse.Namespace) -> int:
    from api.snapshot import SnapshotError, located_objects, location, read_text

    total_problems = 0
    if problem := cluster_problem(getattr(args, "kubeconfig", None)):
        print(problem)
        total_problems += 1
    located: list[tuple[str, Any]] = []  # every object of every file, for the checks across documents
    for path in manifest_files(args.filename, args.recursive):
        count = 0
        try:
            text = read_text(path)
            objects = list(located_objects(text, str(path)))
        except SnapshotError as exc:
            print(str(exc))
            total_problems += 1
            continue
        if not objects:
            raise CliError(f"{path}: no objects found")
        try:
            require_pools_or_nodes(_kinds(o for _, _, o in objects), str(path), also=VALIDATED_KINDS)
        except CliError as exc:  # a problem line like the others: `FILE: ...`
            print(exc)
            total_problems += 1
        for doc, item, obj in objects:
            count += 1
            where = location(str(path), doc, item, obj)
            located.append((where, obj))
            problems, warnings = problems_of(obj)
            for w in warnings:
                print(f"warning: {where}: {w}", file=sys.stderr)
            for problem in problems:
                print(f"{where}: {problem}")
            total_problems += len(problems)
        print(f"{path}: {count} object(s) checked", file=sys.stderr)
    total_problems += _print_set_problems(located)
    if total_problems:
        print(f"{total_problems} problem(s) found", file=sys.stderr)
        return 1
    print("valid")
    return 0


def _print_set_problems(located: list[tuple[str, Any]]) -> int:
    """DisruptionPolicies that conflict on one NodePool (both named) or outlast its expireAfter."""
    lines = policy_set_lines(located)
    for line in lines:
        print(line)
    for line in overlay_conflicts(located):
        print(f"warning: {line}", file=sys.stderr)
    return len(lines)


def overlay_conflicts(located: list[tuple[str, Any]]) -> list[str]:
    """NodeOverlays another overlay of the same weight overrides on the bundled catalog (in the files' NodePools,
    when they hold any): Karpenter applies such an overlay nowhere and sets its ValidationSucceeded condition False
    (planning/pricing/overlays.py)."""
    from pydantic import ValidationError

    from api.catalog import load_default_catalog
    from api.node_overlay import NodeOverlay
    from planning.cluster import parse_pool
    from planning.pricing.overlays import evaluate_overlays, overlay_pool_labels

    overlays: dict[str, tuple[str, NodeOverlay]] = {}
    pools: dict[str, dict[str, str]] = {}
    for where, obj in located:
        kind = obj.get("kind") if isinstance(obj, dict) else None
        try:
            if kind == "NodeOverlay":
                overlay = NodeOverlay.model_validate(obj)
                overlays[overlay.name] = (where, overlay)
            elif kind == "NodePool":
                pool = parse_pool(obj)
                pools[pool.name] = overlay_pool_labels(pool.name, pool.template_labels)
        except (ValidationError, ValueError, TypeError, AttributeError):
            continue  # already reported
    if not overlays:
        return []
    result = evaluate_overlays(load_default_catalog(), [o for _, o in overlays.values()], pools or None)
    return [f"{overlays[name][0]}: conflicts with another NodeOverlay of weight {overlays[name][1].weight} on the "
            f"same offerings or capacity; it is applied nowhere (give one of them another weight)"
            for name in result.conflicts]
