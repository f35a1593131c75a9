"""Drift (docs/semantics.md §4): replace nodes whose NodeClaim no longer matches its NodePool.

A node is drifted when its NodeClaim says so (condition Drifted=True), when the template hash it was
launched from (`nodeflow.dev/template-hash`, or Karpenter's nodepool-hash with a matching hash version)
differs from the NodePool's, or when its labels no longer satisfy the NodePool requirements. Widening a
requirement that still admits the labels is not drift; behavioural fields never are (they are not hashed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from api import labels as L
from api.catalog import InstanceTypeCatalog
from api.ec2nodeclass import EC2NodeClass
from planning.cluster import Cluster, NodeInfo, PoolInfo
from planning.disruption.candidates import EVENTUAL, Candidate, currently_reschedulable
from planning.disruption.commands import Command
from planning.disruption.method import PassContext, make_command
from planning.disruption.method_names import MethodName
from planning.lifecycle.nodeclass_drift import launch_record, nodeclass_drift
from planning.pricing.replacements import launch_replacements
from planning.scheduling.simulation import Unschedulable
from planning.selectors import match_requirement

MAX_DRIFT_REPLACEMENTS = 10
INSTANCE_TYPE_NOT_FOUND = "InstanceTypeNotFound"
# Karpenter checks instance type drift only on NodeClaims older than this (it lists instance types sparingly).
INSTANCE_TYPE_DRIFT_AFTER = timedelta(hours=1)
CAPACITY_RESERVED = "reserved"


def drift_reason(node: NodeInfo, pool: PoolInfo, node_class: EC2NodeClass | None = None,
                 catalog: InstanceTypeCatalog | None = None, at: datetime | None = None) -> str | None:
    """Why the node is drifted (Karpenter's condition reasons), or None. Karpenter's order: the Drifted
    condition, NodePool static drift, requirements drift, instance type drift (with `catalog` and `at`), then the
    cloud provider (its EC2NodeClass)."""
    claim = node.claim
    if claim is None:
        return None
    if claim.condition_true("Drifted"):
        return claim.conditions["Drifted"].get("reason") or "Drifted"
    reason = nodepool_drift(node, pool)
    if reason is None and catalog is not None and at is not None:
        reason = instance_type_not_found(node, catalog, at)
    if reason is None and node_class is not None:
        drifted = nodeclass_drift(launch_record(claim, node.labels), node_class)
        return drifted.value if drifted is not None else None
    return reason


def instance_type_not_found(node: NodeInfo, catalog: InstanceTypeCatalog, at: datetime) -> str | None:
    """InstanceTypeNotFound (Karpenter nodeclaim/disruption/drift.go, docs/semantics.md §4.1): a NodeClaim older than
    an hour whose instance type label is missing, whose type the catalog no longer lists, or whose type has no
    offering, available or not, in its zone and capacity type (reserved also matches on-demand: a reservation can
    be demoted). An empty catalog knows nothing, so it drifts nothing (Karpenter skips the check when listing fails)."""
    claim = node.claim
    if claim is None or claim.created is None or at - claim.created <= INSTANCE_TYPE_DRIFT_AFTER:
        return None
    if not catalog.instance_types:
        return None
    labels = node.labels | claim.labels
    itype = catalog.get(labels.get(L.INSTANCE_TYPE_LABEL, ""))
    if itype is None:
        return INSTANCE_TYPE_NOT_FOUND
    zone, ct = labels.get(L.ZONE_LABEL), labels.get(L.CAPACITY_TYPE_LABEL)
    cts = {CAPACITY_RESERVED, L.CAPACITY_ON_DEMAND} if ct == CAPACITY_RESERVED else {ct}
    if any((zone is None or o.zone == zone) and (ct is None or o.capacity_type in cts) for o in itype.offerings):
        return None
    return INSTANCE_TYPE_NOT_FOUND


def nodepool_drift(node: NodeInfo, pool: PoolInfo) -> str | None:
    """NodePoolDrifted (the template hash it was launched from is not the pool's) or RequirementsDrifted (its
    labels no longer satisfy the pool's requirements), Karpenter's areStaticFieldsDrifted and
    areRequirementsDrifted; None otherwise. Also what the NodeClaim's Drifted condition says (docs/semantics.md §18)."""
    claim = node.claim
    if claim is None:
        return None
    ours = claim.annotations.get(L.TEMPLATE_HASH_ANNOTATION)
    if ours and pool.template_hash and ours != pool.template_hash:
        return "NodePoolDrifted"
    pool_hash = pool.annotations.get(L.NODEPOOL_HASH_ANNOTATION)
    pool_version = pool.annotations.get(L.NODEPOOL_HASH_VERSION_ANNOTATION)
    claim_hash = claim.annotations.get(L.NODEPOOL_HASH_ANNOTATION)
    claim_version = claim.annotations.get(L.NODEPOOL_HASH_VERSION_ANNOTATION)
    if pool_hash and pool_version and claim_hash and claim_version and pool_version == claim_version \
            and pool_hash != claim_hash:
        return "NodePoolDrifted"
    node_labels = claim.labels | node.labels
    for req in pool.requirements:
        key, op = req.get("key", ""), req.get("operator", "")
        if key not in node_labels:
            if op in ("NotIn", "DoesNotExist"):
                continue
            return "RequirementsDrifted"
        if not match_requirement(key, op, req.get("values") or (), node_labels):
            return "RequirementsDrifted"
    return None


def drifted_since(node: NodeInfo) -> datetime | None:
    claim = node.claim
    if claim is not None and claim.condition_true("Drifted"):
        return claim.condition_time("Drifted") or claim.created
    return claim.created if claim is not None else node.created


def in_flight_by_pool(cluster: Cluster, busy: set[str] | frozenset[str]) -> dict[str, int]:
    """How many nodes of each pool are in flight (a command, termination or repair has them, or they carry the
    disrupted taint): the turns each pool has had."""
    out: dict[str, int] = {}
    for node in cluster.nodes:
        if node.pool and (node.name in busy or node.tainted_disrupted):
            out[node.pool] = out.get(node.pool, 0) + 1
    return out


def fair_order(cands: list[Candidate], key: Callable[[Candidate], Any],
               in_flight: Mapping[str, int]) -> list[Candidate]:
    """Round-robin by pool (kubernetes-sigs/karpenter#3080): each candidate's turn is its rank in its pool by `key`
    plus the pool's nodes already in flight, so one pool's many old drifted nodes do not queue ahead of every
    other pool's first; `key` orders within a turn (oldest drift first)."""
    rank: dict[str, int] = {}
    seen: dict[str, int] = {}
    for c in sorted(cands, key=key):
        rank[c.name] = in_flight.get(c.pool.name, 0) + seen.get(c.pool.name, 0)
        seen[c.pool.name] = seen.get(c.pool.name, 0) + 1
    return sorted(cands, key=lambda c: (rank[c.name], key(c)))


class Drift:
    """One drifted node per pass (pools in turn, oldest drift first within a turn, empty nodes before the rest),
    within `Drifted` budget."""

    name = MethodName.DRIFT
    reason = L.REASON_DRIFTED
    budget_reason = L.REASON_DRIFTED  # the budget it spends (GracefulExpiration's Expiring spends Drifted too)
    disruption_class = EVENTUAL

    def __init__(self, ctx: PassContext, in_flight: Mapping[str, int] | None = None) -> None:
        """`in_flight`: nodes of each pool in flight (in_flight_by_pool), for the pools' turns."""
        self.ctx = ctx
        self.in_flight = in_flight or {}

    def _node_class(self, pool: PoolInfo) -> EC2NodeClass | None:
        return self.ctx.cluster.node_classes.get(pool.node_class) if pool.node_class else None

    def drift_reason(self, c: Candidate) -> str | None:
        """drift_reason with this pass's catalog and time, so InstanceTypeNotFound counts (§4.1)."""
        return drift_reason(c.node, c.pool, self._node_class(c.pool), self.ctx.cluster.catalog_for(c.pool.name),
                            self.ctx.at)

    def should_disrupt(self, c: Candidate) -> bool:
        return not c.pool.static and self.drift_reason(c) is not None

    def since(self, node: NodeInfo) -> datetime | None:
        """When the node became a candidate of this method: the oldest goes first."""
        return drifted_since(node)

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        floor = datetime.min.replace(tzinfo=self.ctx.at.tzinfo)
        # Nodes without reschedulable pods first: v1.14's drift.go still partitions on that, not on IsEmpty (§4.2).
        ordered = fair_order(candidates, lambda c: (bool(c.reschedulable), self.since(c.node) or floor, c.name),
                             self.in_flight)
        return self.first_command(ordered, budgets)

    def first_command(self, ordered: list[Candidate], budgets: dict[str, int]) -> list[Command]:
        """The command of the first candidate, in order, its pool's budget allows and whose pods fit (with new
        nodes pre-spun); the others tried are listed as blocked."""
        for c in ordered:
            if self.ctx.budget_exhausted(c, self.budget_reason, budgets):
                continue
            pods = currently_reschedulable(self.ctx.cluster, c.reschedulable, self.ctx.at)
            sim = self.ctx.scheduler.simulate([c.node], pods, max_new=MAX_DRIFT_REPLACEMENTS,
                                              pending=self.ctx.cluster.pending)
            if sim.unschedulable is Unschedulable.NO_FIT:
                self.ctx.block(c.node, self.ctx.scheduler.launch_blocker(c.pool) or sim.failure_message())
                continue
            if sim.unschedulable is Unschedulable.TOO_MANY_NEW_NODES:
                self.ctx.block(c.node, f"would need more than {MAX_DRIFT_REPLACEMENTS} replacement nodes")
                continue
            replacements, cost = launch_replacements(sim.new_nodes, self.ctx.scheduler.pool_options)
            return [make_command(self, [c], sim, replacements, c.price - cost)]
        return []
