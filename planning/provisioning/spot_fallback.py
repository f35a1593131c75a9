"""The spot fallback record and its cap (docs/semantics.md §15.5; aws/karpenter-provider-aws issues 714, 6425, 8298).

A pool that admits spot launches spot (planning/pricing/replacements.py, Karpenter's launch choice). When EC2
refused every spot offering of a launch's types, the offerings are marked unavailable
(planning/pricing/unavailable_offerings.py) and the next plan launches on-demand: a *fallback*, recorded on the
NodeClaim as `nodeflow.dev/spot-fallback: <RFC 3339>` by the launch (`fell_back`). A DisruptionPolicy's
`spot.maxOnDemandFraction` caps how much of a pool may be on-demand through a fallback (`cap_fallbacks`): at the
cap the pods stay pending with an Event naming it, as Karpenter's pods do when no offering is left. Its
`spot.returnAfter` replaces the recorded nodes with spot later (planning/policies/spot_return.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from api import labels as L
from api.catalog import InstanceTypeCatalog
from api.nodeclass_launch import subnet_zones
from api.policy_controls import SPOT_FALLBACK_ANNOTATION
from api.timestamps import parse_time
from planning.cluster import as_dict, parse_pool
from planning.policies.view import PolicyView
from planning.provisioning.provisioner import Exclusion, PoolExclusion, Unservable
from planning.selectors import match_requirement

_SPOT_LABELS = {L.CAPACITY_TYPE_LABEL: L.CAPACITY_SPOT}


def admits_spot(requirements: Iterable[Mapping[str, Any]]) -> bool:
    """Whether node selector requirements allow `karpenter.sh/capacity-type: spot`."""
    return all(match_requirement(L.CAPACITY_TYPE_LABEL, r.get("operator", ""), r.get("values") or (), _SPOT_LABELS)
               for r in requirements if r.get("key") == L.CAPACITY_TYPE_LABEL)


def _spot_offered(catalog: InstanceTypeCatalog, types: Iterable[str], zones: set[str] | None) -> bool:
    for name in types:
        it = catalog.get(name)
        if it is not None and any(o.available and o.capacity_type == L.CAPACITY_SPOT
                                  and (zones is None or o.zone in zones) for o in it.offerings):
            return True
    return False


def fell_back(requirements: Iterable[Mapping[str, Any]], capacity_type: str, instance_types: Sequence[str],
              zones: set[str] | None, full: InstanceTypeCatalog, applied: InstanceTypeCatalog) -> bool:
    """An on-demand launch in a pool that admits spot, for types the catalog offers as spot in its zones, every one
    of those spot offerings refused lately (`applied`: the catalog with the unavailable offerings marked)."""
    return (capacity_type == L.CAPACITY_ON_DEMAND and admits_spot(requirements)
            and _spot_offered(full, instance_types, zones) and not _spot_offered(applied, instance_types, zones))


def fallback_value(at: datetime) -> str:
    """The annotation's value: when the fallback launched (RFC 3339, UTC, seconds)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def fallback_message(instance_types: Sequence[str]) -> str:
    """The SpotFallback Event on the NodeClaim."""
    shown = ", ".join(instance_types[:3]) + (", ..." if len(instance_types) > 3 else "")
    return (f"Launched on-demand: EC2 refused spot for {shown} lately; a DisruptionPolicy's spot.returnAfter "
            f"replaces it with spot once spot is offered again")


def fallback_since(annotations: Mapping[str, str]) -> datetime | None:
    """When a NodeClaim fell back from spot, None when it did not (or the value is unreadable)."""
    raw = annotations.get(SPOT_FALLBACK_ANNOTATION)
    try:
        return parse_time(raw) if raw else None
    except ValueError:
        return None


# ---- the cap: how much of a pool may be on-demand through a fallback ------------------------------------------

@dataclass(frozen=True, slots=True)
class Capped:
    """A fallback launch the pool's maxOnDemandFraction refused: its pods stay pending."""

    node_pool: str
    pods: list[str]
    message: str


def cap_message(pool: str, cap: Decimal, on_demand: int, total: int) -> str:
    return (f"spot has no capacity and an on-demand fallback would make {on_demand + 1} of {total + 1} nodes of "
            f"nodepool {pool} on-demand, above its DisruptionPolicy's spot.maxOnDemandFraction "
            f"{_percent(cap)}")


def _percent(cap: Decimal) -> str:
    return f"{(cap * 100).normalize():f}%"


def within_cap(cap: Decimal, on_demand: int, total: int) -> bool:
    """Whether one more on-demand node keeps the pool's on-demand share at or under `cap` (a fraction, no rounding:
    25% of a 3-node pool allows no fallback node, of a 4-node pool one)."""
    return Decimal(on_demand + 1) <= cap * Decimal(total + 1)


def capacity_counts(node_claims: Iterable[Any]) -> dict[str, list[int]]:
    """Per pool, [on-demand NodeClaims, all NodeClaims], of those not being deleted (launching ones included)."""
    counts: dict[str, list[int]] = {}
    for raw in node_claims:
        claim = as_dict(raw)
        meta = claim.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        labels = meta.get("labels") or {}
        pool = labels.get(L.NODEPOOL_LABEL, "")
        row = counts.setdefault(pool, [0, 0])
        row[1] += 1
        if _claim_capacity_type(claim) == L.CAPACITY_ON_DEMAND:
            row[0] += 1
    return counts


def _claim_capacity_type(claim: Mapping[str, Any]) -> str:
    labels = (claim.get("metadata") or {}).get("labels") or {}
    if labels.get(L.CAPACITY_TYPE_LABEL):
        return str(labels[L.CAPACITY_TYPE_LABEL])
    for req in (claim.get("spec") or {}).get("requirements") or ():
        values = req.get("values") or ()
        if req.get("key") == L.CAPACITY_TYPE_LABEL and req.get("operator") == "In" and len(values) == 1:
            return str(values[0])
    return ""


def pod_admits_spot(pod: Mapping[str, Any]) -> bool:
    """Whether a pod's nodeSelector and required node affinity let it run on spot (a pod that must run on-demand
    is no fallback: it launches on-demand whatever the cap)."""
    spec = pod.get("spec") or {}
    selected = (spec.get("nodeSelector") or {}).get(L.CAPACITY_TYPE_LABEL)
    if selected is not None and selected != L.CAPACITY_SPOT:
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(admits_spot(t.get("matchExpressions") or ()) for t in terms)


def cap_fallbacks(decision: Any, snapshot: Any, full: InstanceTypeCatalog, applied: InstanceTypeCatalog,
                  at: datetime) -> list[Capped]:
    """Drop from a provisioning decision (planning/provisioning/provisioner.py) each on-demand fallback launch that
    would take its pool's on-demand share above `spot.maxOnDemandFraction`; its pods become unservable with the cap as
    reason (a FailedScheduling Event names it). Launches are counted in order, so a batch cannot overshoot the cap."""
    caps: dict[str, Decimal] = {}
    for pool, policy in PolicyView.build(snapshot, at).by_pool.items():
        cap = policy.spec.spot.on_demand_cap if policy.spec.spot is not None else None
        if cap is not None:
            caps[pool] = cap
    if not caps or not decision.launches:
        return []
    requirements = dict(_pool_requirements(p) for p in snapshot.node_pools)
    class_zones = _class_zones(snapshot)
    pods = {f"{(p.get('metadata') or {}).get('namespace', 'default')}/{(p.get('metadata') or {}).get('name')}": p
            for p in map(as_dict, snapshot.pods)}
    counts = capacity_counts(snapshot.node_claims)
    kept, capped = [], []
    for launch in decision.launches:
        r, pool = launch.replacement, launch.node_pool
        row = counts.setdefault(pool, [0, 0])
        cap = caps.get(pool)
        if cap is not None and not within_cap(cap, row[0], row[1]) \
                and fell_back(requirements.get(pool, ()), r.capacity_type, r.instance_types,
                              _zones(r, class_zones.get(pool)), full, applied) \
                and all(pod_admits_spot(pods.get(key, {})) for key in launch.pods):
            message = cap_message(pool, cap, row[0], row[1])
            capped.append(Capped(pool, list(launch.pods), message))
            for key in launch.pods:
                uid = ((pods.get(key) or {}).get("metadata") or {}).get("uid", "")
                decision.unservable.append(Unservable(key, uid, [
                    PoolExclusion(pool, Exclusion.SPOT_FALLBACK_CAP, message)]))
            continue
        kept.append(launch)
        row[1] += 1
        row[0] += r.capacity_type == L.CAPACITY_ON_DEMAND
    decision.launches = kept
    return capped


def _class_zones(snapshot: Any) -> dict[str, set[str]]:
    """Pool -> the zones of its EC2NodeClass's subnets (where it can launch at all; the scheduler's _class_zones)."""
    by_name = {nc.metadata.name: subnet_zones(nc) for nc in getattr(snapshot, "node_classes", None) or ()}
    out = {}
    for obj in snapshot.node_pools:
        pool = parse_pool(obj)
        if by_name.get(pool.node_class):
            out[pool.name] = by_name[pool.node_class]
    return out


def _pool_requirements(pool: Any) -> tuple[str, list[dict[str, Any]]]:
    raw = as_dict(pool)
    spec = raw.get("spec") or {}
    return ((raw.get("metadata") or {}).get("name", ""),
            list(((spec.get("template") or {}).get("spec") or {}).get("requirements") or ()))


def _zones(r: Any, class_zones: set[str] | None) -> set[str] | None:
    """The zones a launch may use: its zone requirement, else its pool's class's subnets (None: any)."""
    for req in r.requirements or ():
        if req.key == L.ZONE_LABEL and req.operator == "In":
            return set(req.values)
    return {r.zone} if r.zone else class_zones
