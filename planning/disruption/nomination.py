"""Nomination (docs/semantics.md §3.1, Karpenter's `StateNode.Nominate`): a node or NodeClaim the provisioner plans
pending pods onto is no disruption candidate for a window, so capacity launched for pods is not consolidated before
kube-scheduler binds them (a real scheduler may retry an unschedulable pod only after its backoff or its
unschedulable-queue flush, up to minutes).

Karpenter keeps the mark in its leader's memory; nodeflow writes it on the object (`nodeflow.dev/nominated-until`,
an RFC 3339 time) so every worker replica, every planner pass and `nodeflow plan -f` on a snapshot see it. Each
provisioning pass re-nominates what it plans onto, so a node that keeps receiving planned pods stays nominated. The
annotation is written again only once less than half the window is left, so a steady stream of passes does not
turn into a stream of writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from api import labels as L
from api.timestamps import format_seconds, parse_time

NOMINATED = "node is nominated for a pending pod"  # Karpenter's ValidateNodeDisruptable message
MIN_WINDOW = timedelta(seconds=10)


class NominatedKind(StrEnum):
    """The object a nomination is written on."""

    NODE_CLAIM = "NodeClaim"
    NODE = "Node"


@dataclass(frozen=True, slots=True)
class Nomination:
    """Write `until` on `kind`/`name`."""

    kind: NominatedKind
    name: str
    until: datetime

    def patch(self) -> dict[str, Any]:
        """The merge patch that records it."""
        return {"metadata": {"annotations": {L.NOMINATED_UNTIL_ANNOTATION: format_seconds(self.until)}}}


def window(batch_max_seconds: float = 10.0) -> timedelta:
    """Karpenter's nominationWindow: max(2 x BatchMaxDuration, 10 s), 20 s with the default batch."""
    return max(timedelta(seconds=2 * batch_max_seconds), MIN_WINDOW)


def nominated_until(node_annotations: Mapping[str, str],
                    claim_annotations: Mapping[str, str] | None) -> datetime | None:
    """The later of the Node's and its NodeClaim's marks; an unparsable one counts as absent."""
    times = [parse_time(a.get(L.NOMINATED_UNTIL_ANNOTATION)) for a in (node_annotations, claim_annotations or {})]
    found = [t for t in times if t is not None]
    return max(found) if found else None


def is_nominated(node_annotations: Mapping[str, str], claim_annotations: Mapping[str, str] | None,
                 at: datetime) -> bool:
    key = L.NOMINATED_UNTIL_ANNOTATION
    if key not in node_annotations and (claim_annotations is None or key not in claim_annotations):
        return False  # asked of every node each pass; few carry the mark
    until = nominated_until(node_annotations, claim_annotations)
    return until is not None and at < until


def nominations(targets: Iterable[str], claims_by_node: Mapping[str, str], objects: Mapping[tuple[str, str], Any],
                now: datetime, span: timedelta) -> list[Nomination]:
    """What to write for the nodes a provisioning pass planned pods onto (`targets`: node names, or launching
    NodeClaim names as planning/provisioning/provisioner.py gives them): on the NodeClaim where there is one, else the
    Node; skipped while more than half of `span` is still ahead. `objects`: (kind, name) -> the object as read."""
    out: dict[tuple[NominatedKind, str], Nomination] = {}
    for target in targets:
        claim = claims_by_node.get(target)
        if claim is not None:
            key = (NominatedKind.NODE_CLAIM, claim)
        elif ("NodeClaim", target) in objects:
            key = (NominatedKind.NODE_CLAIM, target)
        elif ("Node", target) in objects:
            key = (NominatedKind.NODE, target)
        else:
            continue
        obj = objects.get((key[0].value, key[1])) or {}
        current = parse_time(((obj.get("metadata") or {}).get("annotations") or {}).get(L.NOMINATED_UNTIL_ANNOTATION))
        if current is not None and current - now > span / 2:
            continue
        out[key] = Nomination(key[0], key[1], now + span)
    return sorted(out.values(), key=lambda n: (n.kind, n.name))


def pending_capacity(pod_key: str, node: str) -> str:
    """Why a consolidation or emptiness command is not taken: it would take the room a pending pod is about to be
    bound to (Karpenter keeps pending pods in every disruption simulation, `SimulateScheduling`)."""
    return f"pending pod {pod_key} would lose the capacity it fits on (node {node})"


def reserved_capacity(node: str) -> str:
    """Why a command is not taken: the pods of nodes being deleted are planned onto `node` and fit nowhere else."""
    return f"node {node} holds the room planned for the pods of nodes being deleted"
