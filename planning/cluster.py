"""An indexed, read-only view of a snapshot, built once per pass.

Raw Kubernetes JSON is parsed here exactly once (quantities, owners, selectors), pods are indexed by
node, and NodePools are reduced to the fields decisions need, so that the methods and the scheduling
simulation never touch dicts or pydantic models in their inner loops.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from operator import attrgetter
from typing import Any

from api import labels as L
from api.allocatable import for_node_class
from api.capacity_buffer import is_virtual
from api.catalog import InstanceType, InstanceTypeCatalog, load_default_catalog
from api.duration import DurationError, parse_nillable_duration
from api.instance_types.labels import WELL_KNOWN_TYPE_KEYS
from api.quantity import QuantityError, parse_cpu, parse_memory
from api.timestamps import parse_time
from planning.capacity_buffers import snapshot_virtual_pods
from planning.identity_memo import IdentityMemo
from planning.node_pods_memo import NodePodsMemo, PdbAnswers
from planning.pod_requests import pod_requests, resize_infeasible
from planning.pricing.overlays import overlay_pool_labels, priced_by_overlays
from planning.pricing.reservations import with_reservations
from planning.scheduling.default_spread import DefaultSpread, Workloads, configured, defaulted_spec
from planning.scheduling.pod_constraints import MoreConstraints, parse_constraints
from planning.scheduling.volume_topology import (
    VOLUME_KINDS,
    Volumes,
    attachments,
    claim_names,
    csinode_limits,
    instance_type_limits,
    node_terms,
    volume_needs,
)
from planning.selectors import match_label_selector, match_requirement, selector_key, tolerates_all

DEFAULT_EXPIRE_AFTER = timedelta(hours=720)


def as_duration(value: Any, default: timedelta | None) -> timedelta | None:
    """A NillableDuration as the NodePool model or raw JSON gives it: timedelta, "Never", "30s", absent."""
    if isinstance(value, timedelta):
        return value
    if value is None or value == "":
        return default
    try:
        return parse_nillable_duration(str(value))
    except DurationError:
        return default


def as_dict(obj: Any) -> dict[str, Any]:
    """A model (only the fields that were set, camelCase) or a dict, as a plain Kubernetes-JSON dict."""
    if isinstance(obj, dict):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_unset=True)
    raise TypeError(f"cannot read {type(obj).__name__} as a Kubernetes object")


@lru_cache(maxsize=8192)
def _q_cpu_text(v: str) -> float:
    try:
        return parse_cpu(v)
    except (QuantityError, TypeError):
        return 0.0


@lru_cache(maxsize=8192)
def _q_mem_text(v: str) -> int:
    try:
        return parse_memory(v)
    except (QuantityError, TypeError):
        return 0


def _q_cpu(v: Any) -> float:
    """CPU cores; unparsable counts as 0 (a snapshot is read, not validated, here). Cached: values repeat."""
    return _q_cpu_text(str(v))


def _q_mem(v: Any) -> int:
    return _q_mem_text(str(v))


def _conditions(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {c.get("type", ""): c for c in status.get("conditions") or ()}


def type_labels(it: InstanceType) -> dict[str, str]:
    """Labels a node of this instance type carries: every well-known one Karpenter's AWS provider computes
    (api/instance_types/labels.py), so requirements on any of them work on every path. Shared: do not mutate."""
    return it.labels


TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(slots=True)
class PodInfo:
    """One pod, parsed once."""

    key: str
    namespace: str
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    node_name: str
    phase: str
    terminating: bool
    owner_kind: str
    owner_uid: str
    cpu: float
    mem: int
    eph: int
    priority: int | None
    tolerations: list[dict[str, Any]]
    node_selector: dict[str, str]
    affinity_terms: list[dict[str, Any]]
    anti_affinity: list[tuple[Any, frozenset[str]]]  # required anti-affinity on hostname: (selector, namespaces)
    spread: list[tuple[str, int, Any]]  # DoNotSchedule spread on zone and hostname: (key, maxSkew, selector)
    start_raw: Any
    ready: bool
    sig: str
    raw: dict[str, Any]
    # labels as a key, made on first use (Cluster.pdbs_for); a cache, so not part of equality
    label_set: frozenset[tuple[str, str]] | None = field(default=None, compare=False)
    # whether a PDB may hold its eviction (not a mirror pod, not tolerating the disrupted taint), made on first use
    # (planning/disruption/candidates.py pod_block); a cache like `label_set`
    pdb_evictable: bool | None = field(default=None, compare=False)
    # pod affinity, other keys, host ports, preferences (planning/scheduling/pod_constraints.py)
    more: MoreConstraints | None = None
    # why its volumes let it run nowhere (planning/scheduling/volume_topology.py); "" = they do not block
    volume_blocked: str = ""
    # the volumes its claims attach to its node, by CSI driver (volume_topology.py attachments; attachment limits)
    attach: frozenset[tuple[str, str]] = frozenset()
    # its status reports other requests than its spec asks (an in-place resize, pod_requests.py): counted
    resized: bool = False

    @property
    def start_time(self) -> datetime | None:
        """status.startTime, parsed on demand (only the do-not-disrupt duration form needs it)."""
        return parse_time(self.start_raw)

    @property
    def active(self) -> bool:
        return self.phase not in ("Succeeded", "Failed") and not self.terminating

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def is_daemonset(self) -> bool:
        return self.owner_kind == "DaemonSet"

    @property
    def virtual(self) -> bool:
        """A CapacityBuffer's placeholder (planning/capacity_buffers.py): pending forever, never bound or evicted."""
        return is_virtual(self.annotations)

    @property
    def is_mirror(self) -> bool:
        return self.owner_kind == "Node"

    @property
    def reschedulable(self) -> bool:
        """Karpenter IsReschedulable: active (or a terminating StatefulSet pod), not DaemonSet, not mirror."""
        if self.is_daemonset or self.is_mirror:
            return False
        return self.active or (self.terminating and self.owner_kind == "StatefulSet" and not self.terminal)


def _sig(node_selector: dict[str, str], terms: list[dict[str, Any]], tolerations: list[dict[str, Any]],
         strict_pns: bool) -> str:
    """What decides which nodes a pod's static checks pass (nodeSelector, node affinity, tolerations): a cache key."""
    if not (node_selector or terms or tolerations or strict_pns):
        return ""
    return repr((sorted(node_selector.items()), terms, tolerations, strict_pns))


def pod_sig(pod: PodInfo) -> str:
    """`PodInfo.sig` again, after its affinity terms or strictness changed."""
    return _sig(pod.node_selector, pod.affinity_terms, pod.tolerations, pod.more is not None and pod.more.strict_pns)


def with_volume_needs(pod: PodInfo, volumes: Volumes) -> PodInfo:
    """A copy of `pod` whose node affinity terms also carry its volumes' topology (each group of terms ANDed in,
    as Karpenter's volumetopology.go Inject), or that runs nowhere when a claim cannot be met."""
    spec = pod.raw.get("spec") or {}
    needs = volume_needs(pod.namespace, spec, volumes)
    attach = attachments(pod.namespace, spec, volumes)
    if needs.blocked:
        return dataclasses.replace(pod, volume_blocked=needs.blocked, attach=attach)
    terms = list(pod.affinity_terms) or [{"matchExpressions": []}]
    for group in node_terms(needs):
        terms = [{"matchExpressions": [*(t.get("matchExpressions") or ()), *(g.get("matchExpressions") or ())]}
                 for t in terms for g in group]
    if terms == [{"matchExpressions": []}]:
        return dataclasses.replace(pod, attach=attach) if attach else pod
    out = dataclasses.replace(pod, affinity_terms=terms, attach=attach)
    out.sig = pod_sig(out)
    return out


def with_default_spread(pod: PodInfo, spread: DefaultSpread, workloads: Workloads) -> PodInfo:
    """A copy of `pod` carrying the cluster-default topology spread constraints in its spec, as kube-scheduler
    applies them to a pod with none of its own (planning/scheduling/default_spread.py); `pod` itself when it keeps
    its spec. DaemonSet, mirror and finished pods are left alone: the simulation never places them."""
    if pod.is_daemonset or pod.is_mirror or pod.terminal:
        return pod
    raw = pod.raw
    spec = defaulted_spec(raw.get("spec") or {}, raw.get("metadata") or {}, pod.labels, spread, workloads)
    if spec is None:
        return pod
    key = repr((pod.namespace, spec["topologySpreadConstraints"][0].get("labelSelector"), spec.get("affinity"),
                spec.get("nodeSelector"), [(c.get("ports"), c.get("restartPolicy")) for k in (
                    "containers", "initContainers") for c in spec.get(k) or ()]))
    parsed = workloads.parsed.get(key)  # what parse_constraints reads: a workload's replicas share it
    if parsed is None:
        parsed = workloads.parsed[key] = parse_constraints(spec, pod.namespace, pod.labels)
    anti, fast, more = parsed
    return dataclasses.replace(pod, raw={**raw, "spec": spec}, anti_affinity=anti, spread=fast, more=more)


# Labels an instance type or offering decides, so a pool that does not pin them may still meet a selector on them
TYPE_DECIDED = frozenset({*WELL_KNOWN_TYPE_KEYS, L.ZONE_LABEL, L.CAPACITY_TYPE_LABEL, L.HOSTNAME_LABEL})


def daemon_fits_pool(pod: PodInfo, pool: PoolInfo) -> bool:
    """Whether a DaemonSet's pod would run on a new node of `pool` (Karpenter isDaemonPodCompatible): it tolerates
    the pool's taints, and its nodeSelector and required node affinity hold on the pool's labels, a label the pool
    leaves to the instance type counting as met."""
    if not tolerates_all(pod.tolerations, pool.taints):
        return False
    labels = dict(pool.template_labels)
    for r in pool.requirements:
        if r.get("operator") == "In" and len(r.get("values") or ()) == 1:
            labels.setdefault(r.get("key", ""), r["values"][0])
    labels[L.NODEPOOL_LABEL] = pool.name

    def holds(key: str, op: str, values: Sequence[str]) -> bool:
        if key not in labels and key in TYPE_DECIDED:
            return True
        return match_requirement(key, op, values, labels)

    if not all(holds(k, "In", (v,)) for k, v in pod.node_selector.items()):
        return False
    return not pod.affinity_terms or any(
        all(holds(e.get("key", ""), e.get("operator", ""), e.get("values") or ())
            for e in t.get("matchExpressions") or ()) for t in pod.affinity_terms)


def parse_pod(raw: dict[str, Any]) -> PodInfo:
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    ns = meta.get("namespace") or "default"
    name = meta.get("name", "")
    owners = meta.get("ownerReferences") or ()
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    # init containers, sidecars, overhead and an in-place resize as kube-scheduler counts them (pod_requests.py);
    # an Infeasible resize keeps its spec too: a pod the simulation moves is recreated at its spec (semantics §3.5)
    req = pod_requests(spec, status)
    if status.get("containerStatuses") and resize_infeasible(status):
        req = req.max(pod_requests(spec))
    resized = _resized(spec, status, req)
    affinity = spec.get("affinity") or {}
    node_aff = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = list(node_aff.get("nodeSelectorTerms") or ())
    anti, spread, more = parse_constraints(spec, ns, meta.get("labels") or {})  # planning/scheduling/pod_constraints.py
    tolerations = list(spec.get("tolerations") or ())
    node_selector = dict(spec.get("nodeSelector") or {})
    sig = _sig(node_selector, terms, tolerations, False)
    # a snapshot written without pod status (e.g. generated) means running and ready
    ready = True
    for c in status.get("conditions") or ():
        if c.get("type") == "Ready":
            ready = c.get("status") == "True"
            break
    return PodInfo(
        key=f"{ns}/{name}", namespace=ns, name=name, uid=meta.get("uid", ""),
        labels=meta.get("labels") or {}, annotations=meta.get("annotations") or {},
        node_name=spec.get("nodeName") or "", phase=status.get("phase") or "Running",
        terminating=bool(meta.get("deletionTimestamp")), owner_kind=owner.get("kind", ""),
        owner_uid=owner.get("uid") or owner.get("name", ""), cpu=req.cpu, mem=req.mem, eph=req.eph,
        priority=spec.get("priority"), tolerations=tolerations, node_selector=node_selector,
        affinity_terms=terms, anti_affinity=anti, spread=spread,
        start_raw=status.get("startTime"), ready=ready, sig=sig, raw=raw, more=more, resized=resized,
    )


def _resized(spec: Mapping[str, Any], status: Mapping[str, Any], req: Any) -> bool:
    """Whether what the pod counts differs from its spec alone: its status reports resources (an in-place resize,
    a request-mutating webhook's result) that change it. A status that repeats the spec's requests word for word,
    the common case, is settled without parsing a quantity."""
    statuses = [*(status.get("containerStatuses") or ()), *(status.get("initContainerStatuses") or ())]
    if not statuses:
        return False
    asked = {c.get("name"): (c.get("resources") or {}).get("requests") or {}
             for key in ("containers", "initContainers") for c in spec.get(key) or ()}
    if all(_as_asked(cs, asked.get(cs.get("name"))) for cs in statuses):
        return False
    spec_only = pod_requests(spec)
    return (req.cpu, req.mem, req.eph) != (spec_only.cpu, spec_only.mem, spec_only.eph)


def _as_asked(cs: Mapping[str, Any], asked: Mapping[str, Any] | None) -> bool:
    """A container status that reports no resources (kube counts none) or exactly its spec's requests."""
    res = cs.get("resources")
    if res is None:
        return True
    alloc = cs.get("allocatedResources")
    return (res.get("requests") or {}) == asked and (alloc is None or alloc == asked)


@dataclass(slots=True)
class ClaimInfo:
    """The NodeClaim fields decisions read."""

    name: str
    uid: str
    created: datetime | None
    deleting: bool
    labels: dict[str, str]
    annotations: dict[str, str]
    conditions: dict[str, dict[str, Any]]
    last_pod_event: datetime | None
    termination_grace_period: str | None
    expire_after: timedelta | None
    has_expire_after: bool
    node_name: str
    provider_id: str
    node_pool: str
    image_id: str = ""  # status.imageID: the image it was launched from (EC2NodeClass drift)
    spec_labels: dict[str, str] = field(default_factory=dict)  # single-valued `In` requirements (arch before join)

    def condition_true(self, kind: str) -> bool:
        return self.conditions.get(kind, {}).get("status") == "True"

    def condition_time(self, kind: str) -> datetime | None:
        return parse_time(self.conditions.get(kind, {}).get("lastTransitionTime"))


def _claim_from_model(obj: Any) -> ClaimInfo:
    """Fast path for api.nodeclaim.NodeClaim: read attributes, no serialization (5,000 claims per pass)."""
    meta, spec, status = obj.metadata, obj.spec, obj.status
    labels = dict(meta.labels or {})
    owner_pool = next((o.name for o in meta.owner_references or () if o.kind == "NodePool"), "")
    has_expire = "expire_after" in spec.model_fields_set
    conditions = {
        c.type: {"type": c.type, "status": c.status, "reason": c.reason, "lastTransitionTime": c.last_transition_time}
        for c in status.conditions or ()
    }
    return ClaimInfo(
        name=meta.name, uid=meta.uid or "", created=meta.creation_timestamp,
        deleting=meta.deletion_timestamp is not None, labels=labels, annotations=dict(meta.annotations or {}),
        conditions=conditions, last_pod_event=status.last_pod_event_time,
        termination_grace_period=spec.termination_grace_period,
        expire_after=as_duration(spec.expire_after, None) if has_expire else None,
        has_expire_after=has_expire, node_name=status.node_name or "", provider_id=status.provider_id or "",
        node_pool=labels.get(L.NODEPOOL_LABEL) or owner_pool, image_id=status.image_id or "",
        spec_labels=_single_values((r.key, r.operator, r.values) for r in spec.requirements or ()),
    )


def _single_values(requirements: Iterable[tuple[Any, Any, Any]]) -> dict[str, str]:
    """Labels a claim's requirements pin to one value (`In` with one value): what its node will carry."""
    return {key: values[0] for key, op, values in requirements if op == "In" and values and len(values) == 1}


def parse_claim(obj: Any) -> ClaimInfo:
    if not isinstance(obj, dict) and all(hasattr(obj, a) for a in ("metadata", "spec", "status")) \
            and hasattr(obj.spec, "model_fields_set") and hasattr(obj.status, "last_pod_event_time"):
        return _claim_from_model(obj)
    raw = as_dict(obj)
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    labels = dict(meta.get("labels") or {})
    owner_pool = next((o.get("name", "") for o in meta.get("ownerReferences") or () if o.get("kind") == "NodePool"), "")
    has_expire = "expireAfter" in spec and spec.get("expireAfter") is not None
    return ClaimInfo(
        name=meta.get("name", ""), uid=meta.get("uid", ""), created=parse_time(meta.get("creationTimestamp")),
        deleting=bool(meta.get("deletionTimestamp")), labels=labels, annotations=dict(meta.get("annotations") or {}),
        conditions=_conditions(status), last_pod_event=parse_time(status.get("lastPodEventTime")),
        termination_grace_period=spec.get("terminationGracePeriod"),
        expire_after=as_duration(spec.get("expireAfter"), None) if has_expire else None,
        has_expire_after=has_expire, node_name=status.get("nodeName") or "",
        provider_id=status.get("providerID") or "", node_pool=labels.get(L.NODEPOOL_LABEL) or owner_pool,
        image_id=status.get("imageID") or "",
        spec_labels=_single_values((r.get("key"), r.get("operator"), r.get("values")) for r in
                                   spec.get("requirements") or () if isinstance(r, dict)),
    )


@dataclass(frozen=True)
class Parsed:
    """A snapshot's pods and NodeClaims already parsed, in the snapshot's order (Cluster.from_parts)."""

    pods: Sequence[PodInfo]
    claims: Sequence[ClaimInfo] | None = None
    # what raw objects alone decide, carried between passes by the objects' identity (the worker's cache view)
    memo: IdentityMemo | None = None


@dataclass(slots=True)
class PoolInfo:
    """The NodePool fields decisions read, with defaults applied."""

    name: str
    consolidate_after: timedelta | None
    consolidation_policy: str
    expire_after: timedelta | None
    requirements: list[dict[str, Any]]
    template_labels: dict[str, str]
    taints: list[dict[str, Any]]
    limits: dict[str, str]
    weight: int
    template_hash: str | None
    annotations: dict[str, str]
    static: bool
    node_class: str = ""  # the EC2NodeClass its template's nodeClassRef names ("" for another kind)
    replicas: int | None = None  # spec.replicas of a static NodePool (planning/provisioning/static_capacity.py)
    uid: str = ""
    deleting: bool = False  # metadata.deletionTimestamp set: static capacity leaves its NodeClaims alone (§14.2)

    @property
    def paused(self) -> bool:
        return self.annotations.get(L.PAUSED_ANNOTATION, "").lower() == "true"


def parse_pool(obj: Any) -> PoolInfo:
    raw = as_dict(obj)
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    disruption = spec.get("disruption") or {}
    tmpl = spec.get("template") or {}
    tspec = tmpl.get("spec") or {}

    def attr(name: str, fallback: Any) -> Any:
        value = getattr(obj, name, None) if not isinstance(obj, dict) else None
        if callable(value):
            value = value()
        return fallback if value is None else value

    consolidate_raw = attr("consolidate_after", disruption.get("consolidateAfter", "0s"))
    expire_raw = attr("expire_after", tspec.get("expireAfter", disruption.get("expireAfter", "720h")))
    # An accessor returning None means "Never" when the raw field says so, else "not set".
    consolidate_after = as_duration(consolidate_raw, timedelta(0))
    if disruption.get("consolidateAfter") == "Never":
        consolidate_after = None
    expire_after = as_duration(expire_raw, DEFAULT_EXPIRE_AFTER)
    if (tspec.get("expireAfter") or disruption.get("expireAfter")) == "Never":
        expire_after = None
    try:
        template_hash = attr("template_hash", None)
    except Exception:  # a model that cannot hash itself simply gives no hash drift
        template_hash = None
    policy = attr("consolidation_policy", disruption.get("consolidationPolicy") or "WhenEmptyOrUnderutilized")
    return PoolInfo(
        name=meta.get("name", "") or str(attr("name", "")),
        consolidate_after=consolidate_after,
        consolidation_policy=str(getattr(policy, "value", policy)),
        expire_after=expire_after,
        requirements=[dict(r) for r in tspec.get("requirements") or ()],
        template_labels=dict((tmpl.get("metadata") or {}).get("labels") or {}),
        taints=list(tspec.get("taints") or ()),
        limits={k: str(v) for k, v in (spec.get("limits") or {}).items()},
        weight=int(spec.get("weight") or 0),
        template_hash=str(template_hash) if template_hash is not None else None,
        annotations=dict(meta.get("annotations") or {}),
        static=spec.get("replicas") is not None,
        node_class=_ec2_node_class(tspec.get("nodeClassRef")),
        replicas=_replicas(spec.get("replicas")),
        uid=str(meta.get("uid") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def _replicas(value: Any) -> int | None:
    """spec.replicas as a count; a value that is not a count (validation reports it) keeps the pool at 0."""
    if value is None:
        return None
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


def _ec2_node_class(ref: Any) -> str:
    """The name a nodeClassRef gives when it points at an EC2NodeClass (karpenter.k8s.aws), else ""."""
    if not isinstance(ref, dict) or ref.get("kind") != "EC2NodeClass":
        return ""
    return str(ref.get("name") or "") if ref.get("group", "karpenter.k8s.aws") == "karpenter.k8s.aws" else ""


@dataclass(slots=True)
class NodeInfo:
    """One node with its NodeClaim, pool, instance type, price and the pods bound to it."""

    index: int
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    taints: list[dict[str, Any]]
    unschedulable: bool
    ready: bool
    deleting: bool
    created: datetime | None
    cpu: float
    mem: int
    max_pods: int
    eph: int
    used_cpu: float = 0.0
    used_mem: int = 0
    used_pods: int = 0
    used_eph: int = 0
    pods: list[PodInfo] = field(default_factory=list)
    claim: ClaimInfo | None = None
    pool: str = ""
    itype: InstanceType | None = None
    price: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict)
    eviction_sum: float | None = None  # cached sum of the pods' eviction costs
    # attachable volumes by CSI driver: its CSINode's counts over its instance type's (volume_topology.py)
    volume_limits: dict[str, int] = field(default_factory=dict)
    attached: set[tuple[str, str]] = field(default_factory=set)  # the volumes its pods attach
    reschedulable_pods: list[PodInfo] | None = None  # cached: planning/disruption/candidates.py reschedulable_of
    # cached `marked_for_deletion` (asked ~10 times per node a pass); its inputs, `deleting` and the claim, are
    # set before a pass reads it (Cluster.from_parts) and never change after
    marked: bool | None = field(default=None, compare=False, repr=False)
    # what its pods alone decide, carried between passes while it holds the same PodInfos (Cluster.from_parts with
    # a memo; planning/node_pods_memo.py), and those values for this pass (candidates.py node_pods)
    pods_memo: NodePodsMemo | None = field(default=None, compare=False, repr=False)
    pod_values: Any = field(default=None, compare=False, repr=False)

    @property
    def zone(self) -> str:
        return self.labels.get(L.ZONE_LABEL, "")

    @property
    def capacity_type(self) -> str:
        return self.labels.get(L.CAPACITY_TYPE_LABEL, "")

    @property
    def initialized(self) -> bool:
        return self.labels.get(L.INITIALIZED_LABEL) == "true"

    @property
    def marked_for_deletion(self) -> bool:
        marked = self.marked
        if marked is None:
            marked = self.marked = marked_for_deletion(self.deleting, self.claim)
        return marked

    @property
    def tainted_disrupted(self) -> bool:
        return L.disrupted_taint_in(self.taints)

    @property
    def going(self) -> bool:
        return machine_going(self.deleting, self.taints, self.claim)


def reserved_pool_catalogs(pools: Mapping[str, PoolInfo], pool_catalogs: Mapping[str, InstanceTypeCatalog],
                           catalog: InstanceTypeCatalog, node_classes: Mapping[str, Any]
                           ) -> dict[str, InstanceTypeCatalog]:
    """Each pool's catalog with its EC2NodeClass's capacity reservations as `reserved` offerings (§16.4)."""
    out = dict(pool_catalogs)
    for name, pool in pools.items():
        nc = node_classes.get(pool.node_class)
        found = getattr(getattr(nc, "status", None), "capacity_reservations", None)
        if found:
            out[name] = with_reservations(out.get(name, catalog), found)
    return out



def _attach_claims(nodes: list[NodeInfo], claims: Iterable[ClaimInfo]) -> None:
    """Each NodeClaim onto its Node, by node name, else by provider id (a claim not yet registered names none)."""
    by_name = {n.name: n for n in nodes}
    by_provider = {pid: n for n in nodes if (pid := (n.raw.get("spec") or {}).get("providerID"))}
    for c in claims:
        node = by_name.get(c.node_name) if c.node_name else None
        if node is None and c.provider_id:
            node = by_provider.get(c.provider_id)
        if node is not None:
            node.claim = c


def _place_pods(pods: Iterable[PodInfo], by_name: dict[str, NodeInfo], spread: Any, workloads: Workloads | None,
                volumes: Volumes) -> tuple[list[PodInfo], int, int]:
    """Each pod onto its node (its requests counted unless it is terminal), or among the pending pods; the cluster
    default spread and volume needs applied first. Returns the pending pods and, for the pass's scheduling gauges
    (telemetry/metrics.py), how many pods got a default spread and how many are resizing."""
    pending: list[PodInfo] = []
    defaulted = resizing = 0
    has_volumes = bool(volumes)  # asked once, not per pod (72k pods at 5,000 nodes)
    find = by_name.get
    for pod in pods:
        resizing += pod.resized
        if workloads is not None:
            spread_pod = with_default_spread(pod, spread, workloads)
            defaulted += spread_pod is not pod and not pod.virtual
            pod = spread_pod
        if has_volumes and claim_names(pod.raw.get("spec") or {}):
            pod = with_volume_needs(pod, volumes)
        node = find(pod.node_name) if pod.node_name else None
        if node is None:
            if not pod.node_name and pod.active:
                pending.append(pod)
            continue
        node.pods.append(pod)
        if pod.phase not in TERMINAL_PHASES:  # PodInfo.terminal, inline
            if pod.attach:
                node.attached |= pod.attach
            node.used_cpu += pod.cpu
            node.used_mem += pod.mem
            node.used_pods += 1
            node.used_eph += pod.eph
    return pending, defaulted, resizing


def _type_nodes(nodes: Iterable[NodeInfo], pool_catalogs: Mapping[str, InstanceTypeCatalog],
                catalog: InstanceTypeCatalog, csinodes: Mapping[str, Mapping[str, Any]]) -> None:
    """Each node's pool, instance type (its pool's overlaid catalog), price, volume limits, and the capacity its type
    gives where the Node reports none."""
    for n in nodes:
        n.pool = n.labels.get(L.NODEPOOL_LABEL, "") or (n.claim.node_pool if n.claim else "")
        n.itype = pool_catalogs.get(n.pool, catalog).get(n.labels.get(L.INSTANCE_TYPE_LABEL, ""))
        n.volume_limits = {**(instance_type_limits(n.itype.hypervisor, n.itype.local_nvme) if n.itype else {}),
                           **(csinode_limits(csinodes[n.name]) if n.name in csinodes else {})}
        if n.itype is not None:
            off = n.itype.offering(n.zone, n.capacity_type)
            n.price = off.price if off is not None else 0.0
            if n.cpu == 0 and n.mem == 0:
                n.cpu, n.mem, n.max_pods = n.itype.cpu_cores, n.itype.memory_bytes, n.itype.pods
            if n.eph == 0:
                n.eph = n.itype.ephemeral_storage_bytes


def marked_for_deletion(node_deleting: bool, claim: ClaimInfo | None) -> bool:
    """Karpenter MarkedForDeletion: NodeClaim deleting or instance terminating, or Node deleting alone."""
    if claim is not None:
        return claim.deleting or claim.condition_true("InstanceTerminating") or node_deleting
    return node_deleting


def machine_going(node_deleting: bool, taints: Iterable[Mapping[str, Any]], claim: ClaimInfo | None) -> bool:
    """Its machine is on its way out: marked for deletion, or draining under a TerminationWorkflow (tainted, its
    NodeClaim owned by one: expiry, an interruption, a repair start one without deleting the claim first, where
    Karpenter deletes the claim). A disruption's candidate waiting for its replacement is not; a cancelled
    termination untaints the node, so it is not either. The planner (NodeInfo.going) and the pending-pod intake
    (runtime/pending_pods.py, on raw objects) both ask this."""
    return marked_for_deletion(node_deleting, claim) or (
        L.disrupted_taint_in(taints) and claim is not None and L.TERMINATION_WORKFLOW_ANNOTATION in claim.annotations)


def going_nodes(nodes: Iterable[Mapping[str, Any]], claims: Iterable[Any]) -> set[str]:
    """Names of the Nodes whose machine is going (machine_going), read from raw Nodes and NodeClaims; a deleting
    NodeClaim's node counts even when its Node is not listed."""
    by_node = {c.node_name: c for c in map(parse_claim, claims) if c.node_name}
    out = {c.node_name for c in by_node.values() if marked_for_deletion(False, c)}
    for n in nodes:
        meta = n.get("metadata") or {}
        name = meta.get("name", "")
        if name and machine_going(bool(meta.get("deletionTimestamp")), (n.get("spec") or {}).get("taints") or (),
                                  by_node.get(name)):
            out.add(name)
    return out


def parse_node(index: int, raw: dict[str, Any], memo: IdentityMemo | None = None) -> NodeInfo:
    """A fresh NodeInfo (a pass changes it); with `memo`, what the raw Node alone decides is derived once per
    object and carried between passes (planning/identity_memo.py), its dicts and list copied as ever."""
    return _node_info(index, raw, _node_fields(raw) if memo is None else memo.get("Node", raw, _node_fields))


def _node_info(index: int, raw: dict[str, Any], fields: tuple[Any, ...]) -> NodeInfo:
    """A fresh NodeInfo of a raw Node and its `_node_fields`, its dicts and list copied (a pass changes them)."""
    (name, uid, labels, annotations, taints, unschedulable, ready, deleting, created, cpu, mem, max_pods,
     eph) = fields
    return NodeInfo(
        index=index, name=name, uid=uid, labels=dict(labels), annotations=dict(annotations), taints=list(taints),
        unschedulable=unschedulable, ready=ready, deleting=deleting, created=created, cpu=cpu, mem=mem,
        max_pods=max_pods, eph=eph, raw=raw,
    )


def _node_fields(raw: dict[str, Any]) -> tuple[Any, ...]:
    """What parse_node reads of a raw Node: its own values (labels, annotations and taints as the object holds
    them, never changed), parsed."""
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    conds = _conditions(status)
    return (meta.get("name", ""), meta.get("uid", ""), meta.get("labels") or {}, meta.get("annotations") or {},
            spec.get("taints") or (), bool(spec.get("unschedulable")),
            conds.get("Ready", {}).get("status") == "True", bool(meta.get("deletionTimestamp")),
            parse_time(meta.get("creationTimestamp")), _q_cpu(alloc.get("cpu", 0)), _q_mem(alloc.get("memory", 0)),
            int(_q_cpu(alloc.get("pods", 110)) or 110), _q_mem(alloc.get("ephemeral-storage", 0)))


@dataclass(slots=True)
class PdbInfo:
    namespace: str
    name: str
    selector: dict[str, Any]
    disruptions_allowed: int
    always_allow_unhealthy: bool
    fully_blocking: bool
    spec: dict[str, Any] | None = None  # set when status.disruptionsAllowed is absent: computed from pods

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _scaled(value: Any, total: int) -> int:
    """An int-or-percent PDB field against `total` pods, rounded up as the disruption controller does."""
    text = str(value)
    if text.endswith("%"):
        try:
            return -(-int(text[:-1]) * total // 100)
        except ValueError:
            return total
    try:
        return int(text)
    except ValueError:
        return total


def pdb_allowed_from_pods(spec: dict[str, Any], pods: list[PodInfo]) -> int:
    """status.disruptionsAllowed as the disruption controller would compute it, for PDBs without status."""
    expected = len(pods)
    healthy = sum(1 for p in pods if p.ready)
    if spec.get("minAvailable") is not None:
        return max(healthy - _scaled(spec["minAvailable"], expected), 0)
    if spec.get("maxUnavailable") is not None:
        return max(healthy - (expected - _scaled(spec["maxUnavailable"], expected)), 0)
    return max(healthy - expected, 0)  # neither set: minAvailable defaults to all pods


def parse_pdb(raw: dict[str, Any]) -> PdbInfo:
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    fully = max_unavailable in (0, "0", "0%") or min_available == "100%"
    allowed = status.get("disruptionsAllowed")
    return PdbInfo(
        namespace=meta.get("namespace") or "default", name=meta.get("name", ""),
        selector=spec.get("selector") or {}, disruptions_allowed=int(allowed or 0),
        always_allow_unhealthy=spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow", fully_blocking=fully,
        spec=spec if allowed is None else None,
    )


_ANTI, _PODS = attrgetter("anti_affinity"), attrgetter("pods")


class Cluster:
    """Nodes (with claims, pools, prices and pods), pending pods, PDBs and the catalog of one snapshot."""

    def __init__(self, nodes: list[NodeInfo], pools: dict[str, PoolInfo], claims: list[ClaimInfo],
                 pending: list[PodInfo], pdbs: list[PdbInfo], catalog: InstanceTypeCatalog) -> None:
        self.nodes = nodes
        self.by_name = {n.name: n for n in nodes}
        self.pools = pools
        self.claims = claims
        self.pending = pending
        self.pdbs_by_ns: dict[str, list[PdbInfo]] = {}
        # PDBs indexed by one (namespace, key, value) of their matchLabels; others are checked for every pod
        self._pdb_by_label: dict[tuple[str, str, str], list[PdbInfo]] = {}
        self._pdb_other: dict[str, list[PdbInfo]] = {}
        for p in pdbs:
            self.pdbs_by_ns.setdefault(p.namespace, []).append(p)
            first = next(iter(sorted((p.selector.get("matchLabels") or {}).items())), None)
            if first is not None:
                self._pdb_by_label.setdefault((p.namespace, *first), []).append(p)
            else:
                self._pdb_other.setdefault(p.namespace, []).append(p)
        self.catalog = catalog
        # per NodePool, when a NodeOverlay prices pools differently (planning/pricing/overlays.py); else `catalog`
        self.pool_catalogs: dict[str, InstanceTypeCatalog] = {}
        self.node_classes: dict[str, Any] = {}  # EC2NodeClass models by name (api.ec2nodeclass)
        self.reservation_counts: dict[str, int] = {}  # capacity reservation id -> instances it still has room for
        self.has_anti_affinity = any(map(_ANTI, itertools.chain.from_iterable(map(_PODS, nodes))))
        # pods the cluster-default topology spread was given, and pods counted at an in-place resize (from_parts)
        self.default_spread_pods = 0
        self.resizing_pods = 0
        self._match_counts: dict[tuple[str, str], dict[str, int]] = {}
        self._zone_counts: dict[tuple[str, str], dict[str, int]] = {}
        self._pdb_cache: dict[tuple[str, frozenset[tuple[str, str]]], list[PdbInfo]] = {}
        # why PDBs stop a pod's eviction now, or None, per namespace (candidates.py pod_block; pdb_answers)
        self._pdb_answers: dict[str, PdbAnswers] = {}
        self._pdb_label_keys: dict[str, tuple[str, ...]] = {}
        self._label_index: dict[tuple[str, str, str], list[PodInfo]] | None = None
        self._daemon_overhead: dict[str, tuple[float, int, int]] | None = None
        self._type_alloc: dict[tuple[str, str], tuple[float, int, int, int]] = {}
        self.volumes = Volumes()  # PersistentVolumes, claims and StorageClasses of the snapshot
        # what other modules derive from this cluster alone and keep for the pass (read-only once made)
        self.memo: dict[str, Any] = {}
        # what nodes' pods decide, carried between passes (from_parts with a memo), and each namespace's PDBs as a
        # token that stays the same object while they do (planning/node_pods_memo.py)
        self.pods_memo: NodePodsMemo | None = None
        self.pdb_tokens: dict[str, tuple[Any, ...]] = {}

    def with_volumes(self, pod: PodInfo) -> PodInfo:
        """`pod` with its claims' volume topology in its node requirements (planning/scheduling/volume_topology.py)."""
        if not self.volumes or not claim_names(pod.raw.get("spec") or {}):
            return pod
        return with_volume_needs(pod, self.volumes)

    @classmethod
    def from_snapshot(cls, snapshot: Any, catalog: InstanceTypeCatalog | None = None,
                      default_spread: DefaultSpread | None = None) -> Cluster:
        return cls.from_parts(snapshot, (parse_pod(raw) for raw in snapshot.pods), catalog,
                              default_spread=default_spread)

    @classmethod
    def from_parts(cls, snapshot: Any, pods: Iterable[PodInfo], catalog: InstanceTypeCatalog | None = None,
                   claims: Iterable[ClaimInfo] | None = None, default_spread: DefaultSpread | None = None,
                   memo: IdentityMemo | None = None) -> Cluster:
        """`from_snapshot` with the snapshot's pods (and optionally NodeClaims) already parsed, in its order: the
        worker's watch cache keeps them between passes (runtime/cluster_view.py). Decisions only read PodInfo
        and ClaimInfo; the NodeInfo they change is built here every time. `default_spread`: the cluster-default
        topology spread (None: the process's setting, planning/scheduling/default_spread.py). `memo`: the Nodes'
        own values carried between passes (parse_node)."""
        catalog = catalog or getattr(snapshot, "catalog", None) or load_default_catalog()
        pools = {p.name: p for p in (parse_pool(np) for np in snapshot.node_pools)}
        priced = priced_by_overlays(catalog, getattr(snapshot, "node_overlays", None) or (),  # semantics §16.2
                                    {p.name: overlay_pool_labels(p.name, p.template_labels) for p in pools.values()})
        catalog = priced.catalog
        claims = [parse_claim(c) for c in snapshot.node_claims] if claims is None else list(claims)
        nodes = [parse_node(i, raw) for i, raw in enumerate(snapshot.nodes)] if memo is None else \
            list(map(_node_info, itertools.count(), snapshot.nodes, memo.get_all("Node", snapshot.nodes, _node_fields)))
        _attach_claims(nodes, claims)
        others = getattr(snapshot, "others", ())
        volumes = Volumes.from_objects(o for o in others if o.get("kind") in VOLUME_KINDS)
        spread = configured() if default_spread is None else default_spread
        # CapacityBuffers' virtual pods join the pending pods (Karpenter's GetPendingPods; docs/semantics.md §20)
        virtual = [parse_pod(raw) for raw in snapshot_virtual_pods(others)]
        pending, defaulted, resizing = _place_pods(itertools.chain(pods, virtual), {n.name: n for n in nodes},
                                                   spread, Workloads(others) if spread else None, volumes)
        _type_nodes(nodes, priced.pools, catalog,
                    {(o.get("metadata") or {}).get("name"): o for o in others if o.get("kind") == "CSINode"})
        pdbs = [parse_pdb(p) for p in snapshot.pdbs] if memo is None else [
            pdb if pdb.spec is None else parse_pdb(raw)  # one without status gets its allowed disruptions below
            for pdb, raw in zip(memo.get_all("PodDisruptionBudget", snapshot.pdbs, parse_pdb), snapshot.pdbs,
                                strict=True)]
        cluster = cls(nodes, pools, claims, pending, pdbs, catalog)
        cluster.pool_catalogs = priced.pools
        cluster.node_classes = {c.metadata.name: c for c in getattr(snapshot, "node_classes", ())}
        cluster.pool_catalogs = reserved_pool_catalogs(pools, cluster.pool_catalogs, catalog, cluster.node_classes)
        cluster.reservation_counts = {r.id: r.available_instance_count for nc in cluster.node_classes.values()
                                      for r in getattr(getattr(nc, "status", None), "capacity_reservations", None)
                                      or ()}
        cluster.volumes = volumes
        cluster.default_spread_pods, cluster.resizing_pods = defaulted, resizing
        if memo is not None:
            cluster.pods_memo, cluster.pdb_tokens = memo.nodes, memo.nodes.pdb_tokens(snapshot.pdbs)
            for node in nodes:
                node.pods_memo = memo.nodes
        for pdb in pdbs:
            if pdb.spec is not None:  # a snapshot written without PDB status: derive it from the pods
                pdb.disruptions_allowed = pdb_allowed_from_pods(pdb.spec, cluster.matching_pods(pdb.namespace,
                                                                                                pdb.selector))
        return cluster

    def catalog_for(self, pool: str) -> InstanceTypeCatalog:
        """The catalog a NodePool's new nodes are chosen and priced from: its NodeOverlay prices
        (docs/semantics.md §16.2)."""
        return self.pool_catalogs.get(pool, self.catalog)

    def new_node_allocatable(self, it: InstanceType, node_class: str = "") -> tuple[float, int, int, int]:
        """(cpu cores, memory bytes, pods, ephemeral-storage bytes) allocatable on a new node of `it` launched
        from the EC2NodeClass named `node_class`, as Karpenter computes it before launch (api/allocatable.py: its
        kubelet block, AMI family and disks; an AL2023 class without a kubelet block when the class is unknown).
        Cached per (class, type)."""
        key = (node_class, it.name)
        got = self._type_alloc.get(key)
        if got is None:
            res = for_node_class(it, self.node_classes.get(node_class),
                                 self.catalog.vm_memory_overhead_percent).allocatable
            got = (res.cpu_milli / 1000, res.memory, res.pods, res.ephemeral)
            self._type_alloc[key] = got
        return got

    def pdbs_for(self, pod: PodInfo) -> list[PdbInfo]:
        """PDBs whose selector matches the pod (cached per namespace and label set: replicas share it)."""
        pdbs = self.pdbs_by_ns.get(pod.namespace)
        if not pdbs:
            return []
        if pod.label_set is None:  # kept on the PodInfo, which the worker's cache reuses pass after pass
            pod.label_set = frozenset(pod.labels.items())
        key = (pod.namespace, pod.label_set)
        found = self._pdb_cache.get(key)
        if found is None:
            maybe = list(self._pdb_other.get(pod.namespace, ()))
            for k, v in pod.labels.items():
                maybe.extend(self._pdb_by_label.get((pod.namespace, k, v), ()))
            found = [p for p in maybe if match_label_selector(p.selector, pod.labels)]
            self._pdb_cache[key] = found
        return found

    def pdb_answers(self, namespace: str) -> PdbAnswers:
        """The namespace's PDB answers by label set (planning/disruption/candidates.py): for this pass, or carried
        while its PDBs are the same objects when the cluster has a memo."""
        got = self._pdb_answers.get(namespace)
        if got is None:
            memo = self.pods_memo
            got = PdbAnswers() if memo is None else memo.pdb_answers(namespace, self.pdb_tokens)
            self._pdb_answers[namespace] = got
        return got

    def pdb_label_keys(self, namespace: str) -> tuple[str, ...]:
        """The label keys the selectors of the namespace's PDBs read: which PDBs match a pod depends on those of
        its labels alone."""
        keys = self._pdb_label_keys.get(namespace)
        if keys is None:
            answers = self.pdb_answers(namespace) if self.pods_memo is not None else None  # kept with its answers
            keys = answers.keys if answers is not None else None
            if keys is None:
                found: set[str] = set()
                for p in self.pdbs_by_ns.get(namespace, ()):
                    found.update(p.selector.get("matchLabels") or {})
                    found.update(e.get("key", "") for e in p.selector.get("matchExpressions") or ())
                keys = tuple(sorted(found))
                if answers is not None:
                    answers.keys = keys
            self._pdb_label_keys[namespace] = keys
        return keys

    def _pods_with_label(self, namespace: str, key: str, value: str) -> list[PodInfo]:
        if self._label_index is None:
            index: dict[tuple[str, str, str], list[PodInfo]] = {}
            for n in self.nodes:
                for p in n.pods:
                    if p.active:
                        for k, v in p.labels.items():
                            index.setdefault((p.namespace, k, v), []).append(p)
            self._label_index = index
        return self._label_index.get((namespace, key, value), [])

    def matching_pods(self, namespace: str, selector: dict[str, Any]) -> list[PodInfo]:
        """Active pods bound to nodes in `namespace` that `selector` matches (through the label index)."""
        match_labels = selector.get("matchLabels") or {}
        if match_labels:
            pods: Iterable[PodInfo] = min((self._pods_with_label(namespace, k, v) for k, v in match_labels.items()),
                                          key=len)
        else:
            pods = (p for n in self.nodes for p in n.pods if p.active and p.namespace == namespace)
        return [p for p in pods if match_label_selector(selector, p.labels)]

    def match_counts(self, namespace: str, selector: dict[str, Any]) -> dict[str, int]:
        """Active pods per node name matching a selector in a namespace (cached: topology spread counts)."""
        key = (namespace, selector_key(selector))
        counts = self._match_counts.get(key)
        if counts is None:
            counts = {}
            for p in self.matching_pods(namespace, selector):
                counts[p.node_name] = counts.get(p.node_name, 0) + 1
            self._match_counts[key] = counts
        return counts

    def zone_counts(self, namespace: str, selector: dict[str, Any]) -> dict[str, int]:
        """match_counts summed per zone (cached)."""
        key = (namespace, selector_key(selector))
        counts = self._zone_counts.get(key)
        if counts is None:
            counts = {}
            for name, c in self.match_counts(namespace, selector).items():
                zone = self.by_name[name].zone
                counts[zone] = counts.get(zone, 0) + c
            self._zone_counts[key] = counts
        return counts

    def daemon_overhead(self, pool: str) -> tuple[float, int, int]:
        """cpu, memory, pod count of the DaemonSet pods a new node of `pool` would run (one per DaemonSet): those
        running on the pool's nodes, and those whose pod fits the pool's template (its taints tolerated, its node
        selection met by the pool's labels): Karpenter's getDaemonOverhead, so a pool with no node yet counts them
        too (docs/semantics.md §3.5)."""
        if self._daemon_overhead is None:
            on_pool: dict[str, dict[str, PodInfo]] = {}
            every: dict[str, PodInfo] = {}
            for n in self.nodes:
                for p in n.pods:
                    if p.is_daemonset and p.active:
                        on_pool.setdefault(n.pool, {}).setdefault(p.owner_uid, p)
                        every.setdefault(p.owner_uid, p)
            self._daemon_overhead = {}
            for name in {*on_pool, *self.pools}:
                ds = dict(on_pool.get(name, {}))
                info = self.pools.get(name)
                if info is not None:
                    ds.update({uid: p for uid, p in every.items() if uid not in ds and daemon_fits_pool(p, info)})
                self._daemon_overhead[name] = (sum(p.cpu for p in ds.values()), sum(p.mem for p in ds.values()),
                                               len(ds))
        return self._daemon_overhead.get(pool, (0.0, 0, 0))

    def cost_per_hour(self, nodes: Iterable[NodeInfo] | None = None) -> float:
        return round(sum(n.price for n in (self.nodes if nodes is None else nodes)), 6)
