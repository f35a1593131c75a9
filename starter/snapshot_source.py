"""The flags `nodeflow plan` and `nodeflow budgets` share: where the cluster comes from, and when to evaluate."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from api.timestamps import parse_timestamp
from starter.kubeconfig import resolve
from starter.output import CliError


def add_source_flags(parser: Any, file_help: str, kubeconfig_help: str, at_help: str) -> None:
    """`-f SNAPSHOT` or `--kubeconfig FILE` (at most one; neither: the live cluster of $KUBECONFIG or
    ~/.kube/config), `--context`, `--at RFC3339`."""
    src = parser.add_mutually_exclusive_group()
    src.add_argument("-f", "--filename", metavar="SNAPSHOT", help=file_help)
    src.add_argument("--kubeconfig", metavar="FILE",
                     help=f"{kubeconfig_help} (without -f: $KUBECONFIG, then ~/.kube/config, as kubectl)")
    parser.add_argument("--context", help="kubeconfig context (live cluster)")
    parser.add_argument("--at", metavar="RFC3339", help=at_help)


def live_kubeconfig(args: Any) -> str | None:
    """The kubeconfig to read the live cluster from, or None when `-f SNAPSHOT` was given."""
    if args.filename:
        return None
    kubeconfig = resolve(args.kubeconfig)
    if kubeconfig is None:
        raise CliError("give -f SNAPSHOT (e.g. from `" + SNAPSHOT_COMMAND + "`), or a live cluster: "
                       "--kubeconfig FILE or KUBECONFIG", 2)
    return kubeconfig


def parse_at(text: str | None) -> datetime:
    """RFC3339 time (a missing offset means UTC); `now` or nothing is the current time."""
    if text is None or not text.strip() or text.strip().lower() == "now":
        return datetime.now(UTC).replace(microsecond=0)
    try:
        at = parse_timestamp(text)
    except ValueError:
        raise CliError(f"--at {text!r} is not an RFC3339 time (e.g. 2026-11-23T09:00:00Z)", 2) from None
    if not 1970 <= at.year <= 9000:
        raise CliError(f"--at {text!r} is out of range: use a time between 1970 and 9000", 2)
    return at


SNAPSHOT_COMMAND = "kubectl get nodepools,nodeclaims,ec2nodeclasses,nodes,pods,pdb -A -o yaml > snapshot.yaml"


def require_pools_or_nodes(kinds: Counter[str], source: str, also: tuple[str, ...] = ()) -> None:
    """The check `plan`, `budgets` and `validate` share: a file with neither NodePools nor Nodes (nor a kind in
    `also`) is a wrong file or a partial export, never an empty cluster to plan on."""
    if kinds["NodePool"] or kinds["Node"] or any(kinds[k] for k in also):
        return
    found = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "no objects"
    raise CliError(f"{source}: no NodePool and no Node (found {found}); a snapshot holds the cluster's NodePools "
                   f"and Nodes with their pods, e.g. `{SNAPSHOT_COMMAND}`")


def snapshot_kinds(snapshot: Any) -> Counter[str]:
    """How many objects of each kind a Snapshot holds (kinds with none left out)."""
    kinds = Counter({"NodePool": len(snapshot.node_pools), "NodeClaim": len(snapshot.node_claims),
                     "EC2NodeClass": len(snapshot.node_classes), "Node": len(snapshot.nodes),
                     "Pod": len(snapshot.pods), "PodDisruptionBudget": len(snapshot.pdbs),
                     "DisruptionPolicy": len(getattr(snapshot, "disruption_policies", ())),
                     "NodeOverlay": len(getattr(snapshot, "node_overlays", ()))})
    kinds.update(str(obj.get("kind")) for obj in snapshot.others)
    return +kinds
