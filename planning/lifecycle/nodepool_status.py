"""What a NodePool's status says, decided from the pool, its NodeClaims, Nodes and EC2NodeClass (pure).

Karpenter's NodePool controllers, one function each (docs/semantics.md §18):
- counter (pkg/controllers/nodepool/counter): `status.resources` is the capacity of the pool's nodes that are not
  marked for deletion (cpu, memory, pods, ephemeral-storage at 0 when absent, plus `nodes`); `status.nodes` the count.
- readiness: `NodeClassReady` mirrors the class's `Ready` (False when it is missing, deleting or Unknown).
- validation: `ValidationSucceeded` False with the problems nodeflow's validator finds, else True.
- registrationhealth + nodeclaim liveness/registration: `NodeRegistrationHealthy` from the last 4 launch
  outcomes of the pool (False at 2 failures, True after a success), Unknown again when the pool or its class change.
- `Ready` as operatorpkg computes a root condition: True when ValidationSucceeded and NodeClassReady are.
Beyond Karpenter (kubernetes-sigs/karpenter#2387 and #2017): the allowed disruptions per budget reason, written as
the `nodeflow.dev/allowed-disruptions` annotation (why an annotation: §18).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any

from api import labels
from api.budgets import BudgetRow
from api.nodeclaim import LAUNCHED, REGISTERED
from api.quantity import QuantityError, parse_quantity
from api.timestamps import format_seconds
from api.validation import validate_nodepool
from planning.lifecycle import liveness
from planning.lifecycle.conditions import FALSE, TRUE, UNKNOWN, condition, conditions_of, is_true

Obj = dict[str, Any]

READY = "Ready"
NODE_CLASS_READY = "NodeClassReady"
VALIDATION_SUCCEEDED = "ValidationSucceeded"
NODE_REGISTRATION_HEALTHY = "NodeRegistrationHealthy"
READY_DEPENDENTS = (VALIDATION_SUCCEEDED, NODE_CLASS_READY)  # NodePool.StatusConditions() in Karpenter
NODES_RESOURCE = "nodes"
BASE_RESOURCES = ("cpu", "ephemeral-storage", "memory", "pods", NODES_RESOURCE)
ALLOWED_DISRUPTIONS_ANNOTATION = "nodeflow.dev/allowed-disruptions"
EC2_NODE_CLASS = "EC2NodeClass"
HEALTH_BUFFER = 4  # nodepoolhealth.BufferSize
UNHEALTHY_SHARE = 0.5  # nodepoolhealth.ThresholdFalse


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


# ---- counter: status.resources and status.nodes --------------------------------------------------------------


def _deleting(obj: Mapping[str, Any] | None) -> bool:
    return obj is not None and bool(_meta(obj).get("deletionTimestamp"))


def _capacity(claim: Mapping[str, Any] | None, node: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """StateNode.Capacity: an initialized node's own capacity; before that the node's, with the claim's filling
    the resources the node reports as zero or not at all (a fresh kubelet reports some late)."""
    node_cap = dict(((node or {}).get("status") or {}).get("capacity") or {})
    claim_cap = ((claim or {}).get("status") or {}).get("capacity") or {}
    initialized = node is not None and (_meta(node).get("labels") or {}).get(labels.INITIALIZED_LABEL) == "true"
    if node is None:
        return claim_cap
    if initialized or claim is None:
        return node_cap
    for name, qty in claim_cap.items():
        if _quantity(node_cap.get(name, 0)) == 0:
            node_cap[name] = qty
    return node_cap


def _quantity(value: Any) -> Decimal:
    if isinstance(value, str):
        return _quantity_text(value)
    try:
        return parse_quantity(value)
    except QuantityError:
        return Decimal(0)


@lru_cache(maxsize=4096)
def _quantity_text(value: str) -> Decimal:
    """Capacities repeat across thousands of nodes ("4", "16Gi"): parse each string once."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return Decimal(0)


def _format(value: Decimal) -> str:
    """A sum as a quantity string: whole numbers as integers, fractions in milli-units (cpu)."""
    if value == value.to_integral_value():
        return str(int(value))
    return f"{int((value * 1000).to_integral_value())}m"


def pair_nodes(claims: Iterable[Obj], nodes: Iterable[Obj]) -> list[tuple[Obj | None, Obj | None]]:
    """(claim, node) per machine, joined by providerID as Karpenter's cluster state joins them."""
    by_provider: dict[str, Obj] = {}
    loose: list[tuple[Obj | None, Obj | None]] = []
    for n in nodes:
        pid = (n.get("spec") or {}).get("providerID")
        if pid:
            by_provider[pid] = n
        else:
            loose.append((None, n))
    pairs: list[tuple[Obj | None, Obj | None]] = []
    for c in claims:
        pid = (c.get("status") or {}).get("providerID")
        pairs.append((c, by_provider.pop(pid, None) if pid else None))
    return pairs + [(None, n) for n in by_provider.values()] + loose


def pool_resources(claims: Iterable[Obj], nodes: Iterable[Obj]) -> dict[str, dict[str, str]]:
    """NodePool name -> status.resources: the summed capacity of its machines that are not marked for deletion
    (claim or node deleting, or tainted karpenter.sh/disrupted: nodeflow's durable MarkedForDeletion)."""
    sums: dict[str, dict[str, Decimal]] = {}
    for claim, node in pair_nodes(claims, nodes):
        pool = (_meta(node or claim or {}).get("labels") or {}).get(labels.NODEPOOL_LABEL)
        taints = ((node or {}).get("spec") or {}).get("taints")
        if not pool or _deleting(claim) or _deleting(node) or labels.disrupted_taint_in(taints):
            continue
        capacity = _capacity(claim, node)
        if not capacity:
            continue
        acc = sums.setdefault(pool, {})
        for name, qty in capacity.items():
            acc[name] = acc.get(name, Decimal(0)) + _quantity(qty)
        acc[NODES_RESOURCE] = acc.get(NODES_RESOURCE, Decimal(0)) + 1
    return {pool: {k: _format(v) for k, v in sorted(acc.items())} for pool, acc in sums.items()}


def resources_for(pool: str, resources: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The pool's resources over BaseResources (every base resource present, 0 when it has none)."""
    return {**{name: "0" for name in BASE_RESOURCES}, **resources.get(pool, {})}


# ---- conditions ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cond:
    """One condition as decided: status, reason, message."""

    status: str
    reason: str
    message: str = ""


def node_class_ref(pool: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = (pool.get("spec") or {}).get("template") or {}
    return (spec.get("spec") or {}).get("nodeClassRef") or {}


def managed(pool: Mapping[str, Any]) -> bool:
    """nodepoolutils.IsManaged: the pool names a class of this cloud provider (an EC2NodeClass)."""
    ref = node_class_ref(pool)
    return ref.get("kind", EC2_NODE_CLASS) == EC2_NODE_CLASS and bool(ref.get("name"))


def node_class_ready(node_class: Mapping[str, Any] | None) -> Cond:
    """readiness controller: the pool's NodeClassReady from its class."""
    if node_class is None:
        return Cond(FALSE, "NodeClassNotFound", "NodeClass not found on cluster")
    if _deleting(node_class):
        return Cond(FALSE, "NodeClassTerminating", "NodeClass is Terminating")
    ready = condition(node_class, READY)
    status = str((ready or {}).get("status") or UNKNOWN)
    if status == TRUE:
        return Cond(TRUE, NODE_CLASS_READY)
    if status == FALSE:
        return Cond(FALSE, str(ready.get("reason") or "NodeClassNotReady") if ready else "NodeClassNotReady",
                    str((ready or {}).get("message") or ""))
    return Cond(FALSE, "NodeClassReadinessUnknown", "Node Class Readiness Unknown")


def validation(pool: Mapping[str, Any]) -> Cond:
    """validation controller: RuntimeValidate's verdict (nodeflow's validator, on the pool's spec)."""
    doc = {"apiVersion": pool.get("apiVersion", labels.API_VERSION), "kind": "NodePool",
           "metadata": {"name": _meta(pool).get("name", "")}, "spec": pool.get("spec")}
    problems = validate_nodepool(doc)
    if problems:
        return Cond(FALSE, "NodePoolValidationFailed", "; ".join(problems))
    return Cond(TRUE, VALIDATION_SUCCEEDED)


def ready(decided: Mapping[str, Cond]) -> Cond:
    """operatorpkg's root condition over READY_DEPENDENTS."""
    false = [t for t in READY_DEPENDENTS if decided.get(t, Cond(UNKNOWN, "")).status == FALSE]
    if false:
        return Cond(FALSE, "UnhealthyDependents", ", ".join(f"{t}=False" for t in false))
    unknown = [t for t in READY_DEPENDENTS if decided.get(t, Cond(UNKNOWN, "")).status != TRUE]
    if unknown:
        return Cond(UNKNOWN, "UnhealthyDependents", ", ".join(f"{t}=Unknown" for t in unknown))
    return Cond(TRUE, READY)


# ---- NodeRegistrationHealthy ---------------------------------------------------------------------------------


class Health(StrEnum):
    UNKNOWN = "Unknown"
    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"


@dataclass
class RegistrationTracker:
    """nodepoolhealth.Tracker: the last HEALTH_BUFFER launch outcomes of one pool (True: registered)."""

    outcomes: deque[bool] = field(default_factory=lambda: deque(maxlen=HEALTH_BUFFER))

    def status(self, extra: bool | None = None) -> Health:
        """The verdict, with `extra` appended as a dry run (Karpenter decides on the buffer with the new outcome)."""
        items = [*self.outcomes, *(() if extra is None else (extra,))][-HEALTH_BUFFER:]
        if not items:
            return Health.UNKNOWN
        failed = sum(1 for ok in items if not ok)
        return Health.UNHEALTHY if failed / HEALTH_BUFFER >= UNHEALTHY_SHARE else Health.HEALTHY

    def record(self, ok: bool) -> None:
        self.outcomes.append(ok)

    def set(self, health: Health) -> None:
        """Hydrate from the condition a previous process wrote (SetStatus)."""
        self.outcomes.clear()
        if health is Health.HEALTHY:
            self.outcomes.append(True)
        elif health is Health.UNHEALTHY:
            self.outcomes.extend([False] * int(HEALTH_BUFFER * UNHEALTHY_SHARE))


def registration_outcome(old: Obj | None, new: Obj | None, now: datetime,
                         launch_ttl: timedelta = liveness.LAUNCH_TTL,
                         registration_ttl: timedelta = liveness.REGISTRATION_TTL) -> bool | None:
    """What a NodeClaim watch event says about its pool's registration health: True when the claim just turned
    Registered, False when it is being deleted (or is gone, without a finalizer to hold it) past its liveness
    timeout (launch or registration), else None."""
    if old is None:
        return None
    if new is None:
        return None if _deleting(old) or liveness.expired(old, now, launch_ttl, registration_ttl) is None else False
    if is_true(new, REGISTERED) and not is_true(old, REGISTERED):
        return True
    if _deleting(new) and not _deleting(old):
        return False if liveness.expired(old, now, launch_ttl, registration_ttl) is not None else None
    return None


def failure_cond(claim: Obj) -> Cond:
    """Karpenter's NodeRegistrationHealthy=False: the launch's own reason when it never launched."""
    launched = condition(claim, LAUNCHED)
    if launched is not None and launched.get("status") == TRUE:
        return Cond(FALSE, "RegistrationFailed", "Failed to register node")
    if launched is not None and launched.get("reason"):
        return Cond(FALSE, str(launched["reason"]), str(launched.get("message") or ""))
    return Cond(FALSE, "LaunchFailed", "Failed to launch node")


def registration_reset(pool: Mapping[str, Any], class_generation: int | None) -> bool:
    """registrationhealth controller: the condition goes back to Unknown (and the buffer is emptied) when it is
    missing, the pool's generation moved past it, or its class's generation is not the one last observed."""
    cond = condition(pool, NODE_REGISTRATION_HEALTHY)
    if cond is None:
        return True
    if class_generation is not None and (pool.get("status") or {}).get("nodeClassObservedGeneration") \
            != class_generation:
        return True
    return cond.get("observedGeneration") is not None and cond.get("observedGeneration") != _meta(pool).get(
        "generation")


def registration(pool: Mapping[str, Any], health: Health, reset: bool, failure: Cond | None) -> Cond:
    """The condition: Unknown after a reset; else False on an unhealthy buffer (with the failing claim's reason,
    or the reason already written), True on a healthy one, and as written while the buffer is empty."""
    if reset:
        return Cond(UNKNOWN, "AwaitingReconciliation", "object is awaiting reconciliation")
    current = condition(pool, NODE_REGISTRATION_HEALTHY) or {}
    if health is Health.UNHEALTHY:
        if failure is not None and current.get("status") != FALSE:
            return failure
        if current.get("status") == FALSE:
            return Cond(FALSE, str(current.get("reason") or "RegistrationFailed"), str(current.get("message") or ""))
        return Cond(FALSE, "RegistrationFailed", "Failed to register node")
    if health is Health.HEALTHY:
        return Cond(TRUE, NODE_REGISTRATION_HEALTHY)
    return Cond(str(current.get("status") or UNKNOWN), str(current.get("reason") or "AwaitingReconciliation"),
                str(current.get("message") or ""))


def health_of(pool: Mapping[str, Any]) -> Health:
    """The buffer's state a written condition implies (a restart hydrates the tracker from it)."""
    status = (condition(pool, NODE_REGISTRATION_HEALTHY) or {}).get("status")
    return Health.HEALTHY if status == TRUE else Health.UNHEALTHY if status == FALSE else Health.UNKNOWN


# ---- allowed disruptions -------------------------------------------------------------------------------------


def allowed_disruptions(pool: str, rows: Sequence[BudgetRow]) -> str:
    """`Empty=1,Drifted=0,Underutilized=1,Unhealthy=1`: the pool's allowed disruptions per budget reason, in the rows'
    order (api.budgets.ALL_REASONS), as the planner computes them (api.budgets, docs/semantics.md §1.5)."""
    return ",".join(f"{r.reason}={r.allowed}" for r in rows if r.node_pool == pool)


def parse_allowed(value: str) -> dict[str, int]:
    """The annotation back into {reason: allowed} (for tools and tests)."""
    out: dict[str, int] = {}
    for part in value.split(","):
        reason, _, n = part.partition("=")
        if reason and n.lstrip("-").isdigit():
            out[reason] = int(n)
    return out


# ---- the whole status ----------------------------------------------------------------------------------------


def with_conditions(conds: Sequence[Obj], decided: Mapping[str, Cond], generation: int | None,
                    now: datetime) -> list[Obj]:
    """`conds` with each decided condition set (operatorpkg: lastTransitionTime moves only on a status change;
    observedGeneration is the pool's generation); conditions other writers own are kept as they are."""
    out = [c for c in conds if c.get("type") not in decided]
    by_type = {c.get("type"): c for c in conds}
    for ctype, want in decided.items():
        old = by_type.get(ctype) or {}
        stamp = old.get("lastTransitionTime") if old.get("status") == want.status else None
        cond: Obj = {"type": ctype, "status": want.status, "reason": want.reason, "message": want.message,
                     "lastTransitionTime": stamp or format_seconds(now)}
        if generation is not None:
            cond["observedGeneration"] = generation
        out.append(cond)
    return out


def status_conditions(pool: Mapping[str, Any], node_class: Mapping[str, Any] | None,
                      registration_cond: Cond | None) -> dict[str, Cond]:
    """Every condition this controller owns, decided (for a managed pool: one naming an EC2NodeClass)."""
    decided = {VALIDATION_SUCCEEDED: validation(pool), NODE_CLASS_READY: node_class_ready(node_class)}
    if registration_cond is not None:
        decided[NODE_REGISTRATION_HEALTHY] = registration_cond
    decided[READY] = ready(decided)
    return decided


def status_patch(pool: Mapping[str, Any], resources: Mapping[str, str], decided: Mapping[str, Cond],
                 class_generation: int | None, now: datetime) -> Obj | None:
    """The status merge patch that makes the pool's status as decided, or None when it already is."""
    status = pool.get("status") or {}
    generation = _meta(pool).get("generation")
    conds = conditions_of(pool)
    new_conds = with_conditions(conds, decided, generation, now)
    nodes = int(_quantity(resources.get(NODES_RESOURCE, "0")))
    want: Obj = {"resources": dict(resources), "nodes": nodes}
    if class_generation is not None:
        want["nodeClassObservedGeneration"] = class_generation
    same_conds = _cond_keys(new_conds) == _cond_keys(conds)
    if same_conds and all(status.get(k) == v for k, v in want.items()):
        return None
    # a merge patch merges maps: a resource no node provides any more (a GPU pool scaled to 0) is nulled out
    stale = {k: None for k in status.get("resources") or {} if k not in resources}
    return {"status": {**want, "resources": {**want["resources"], **stale}, "conditions": new_conds}}


def _cond_keys(conds: Sequence[Obj]) -> set[tuple[Any, ...]]:
    return {(c.get("type"), c.get("status"), c.get("reason", ""), c.get("message", ""), c.get("observedGeneration"))
            for c in conds}


def annotation_patch(pool: Mapping[str, Any], value: str) -> Obj | None:
    """The metadata patch that sets the allowed-disruptions annotation, or None when it already says `value`."""
    if (_meta(pool).get("annotations") or {}).get(ALLOWED_DISRUPTIONS_ANNOTATION) == value:
        return None
    return {"metadata": {"annotations": {ALLOWED_DISRUPTIONS_ANNOTATION: value}}}
