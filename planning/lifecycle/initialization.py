"""Initialization: a registered claim's Node is Ready, has shed its startup and ephemeral taints, and reports
every extended resource the claim asked for; then `karpenter.sh/initialized=true` on the Node and
`Initialized=True` on the claim (Karpenter's lifecycle/initialization.go, docs/karpenter-reference.md
§5). There is no initialization timeout."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from api.quantity import QuantityError, parse_memory
from planning.lifecycle.conditions import Obj

EPHEMERAL_TAINTS = (("node.kubernetes.io/not-ready", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute"),
                    ("node.kubernetes.io/unreachable", "NoSchedule"),
                    ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
                    ("karpenter.sh/unregistered", "NoExecute"))
READINESS_PREFIX = "readiness.k8s.io/"


class NotInitialized(StrEnum):
    """Why a registered claim is not initialized yet (the condition's reason), in Karpenter's check order."""

    NODE_NOT_FOUND = "NodeNotFound"
    NODE_NOT_READY = "NodeNotReady"
    STARTUP_TAINTS_EXIST = "StartupTaintsExist"
    KNOWN_EPHEMERAL_TAINTS_EXIST = "KnownEphemeralTaintsExist"
    RESOURCE_NOT_REGISTERED = "ResourceNotRegistered"


@dataclass(frozen=True)
class Verdict:
    reason: NotInitialized | None  # None: initialized
    message: str = ""


def node_ready(node: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


def _taints(node: Obj) -> list[Obj]:
    return list((node.get("spec") or {}).get("taints") or [])


def _quantity(v: object) -> float:
    try:
        return float(parse_memory(str(v)))
    except (QuantityError, ValueError):
        return 0.0


def _unregistered_resource(claim: Obj, node: Obj) -> str | None:
    requests = (((claim.get("spec") or {}).get("resources") or {}).get("requests")) or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    for name, value in sorted(requests.items()):
        if _quantity(value) > 0 and _quantity(allocatable.get(name, 0)) <= 0:
            return name
    return None


def check(claim: Obj, node: Obj | None) -> Verdict:
    """The first check that fails, or an initialized verdict."""
    if node is None:
        return Verdict(NotInitialized.NODE_NOT_FOUND, "node not found")
    if not node_ready(node):
        return Verdict(NotInitialized.NODE_NOT_READY, "node status is NotReady")
    startup = {(t.get("key"), t.get("effect")) for t in (claim.get("spec") or {}).get("startupTaints") or []}
    for t in _taints(node):
        if (t.get("key"), t.get("effect")) in startup:
            return Verdict(NotInitialized.STARTUP_TAINTS_EXIST, f"StartupTaint {t.get('key')!r} still exists")
    for t in _taints(node):
        key = str(t.get("key") or "")
        if (key, t.get("effect")) in EPHEMERAL_TAINTS or key.startswith(READINESS_PREFIX):
            return Verdict(NotInitialized.KNOWN_EPHEMERAL_TAINTS_EXIST, f"KnownEphemeralTaint {key!r} still exists")
    missing = _unregistered_resource(claim, node)
    if missing is not None:
        return Verdict(NotInitialized.RESOURCE_NOT_REGISTERED, f"resource {missing!r} was requested but not registered")
    return Verdict(None)
