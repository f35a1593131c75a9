"""Read the live cluster into a snapshot and run `planning/` on it: the planner pass and re-validation.

Only small results leave the activity (commands with node uids), never the snapshot, so the planner's
history stays small. Nodes already in flight are excluded: tainted `karpenter.sh/disrupted`, or named by a
running disrupt-/terminate- workflow (Temporal visibility; a disruption's memo lists all its nodes).

In the worker the cluster comes from its watch cache (runtime/cluster_view.py), not a LIST per pass. A cache
that is not synced or whose watch is broken is never planned on: the activity waits briefly, then fails with a
retryable ClusterCacheNotReady so Temporal retries it (on whichever worker polls first, maybe one whose cache
is warm); the last of CACHE_ATTEMPTS attempts returns a pass skipped with the reason instead of failing it.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import compress, repeat
from operator import eq
from typing import Any, Protocol

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from activities.events import EventActivities
from activities.heartbeat import heartbeating
from activities.rollout_divert import divert_drift, wave_pools_drifted
from api import labels
from api.catalog import InstanceTypeCatalog, load_catalog
from api.snapshot import Snapshot
from api.timestamps import parse_time
from contracts.disruption import (
    BlockedNode,
    DisruptionCommand,
    EventSpec,
    NodeRef,
    PassSkipped,
    PlanPassInput,
    PlanPassResult,
    Replacement,
    StaticScaleUp,
    ValidateInput,
    ValidationResult,
    validated,
)
from contracts.errors import ErrorType
from gateways.kube import KubeClient, without_disrupted_taint
from planning.disruption.method_names import CONSOLIDATION_METHODS, UNVALIDATED_METHODS, MethodName
from planning.disruption.repair import DEFAULT_POLICIES, RepairBlockReason, RepairPolicy, as_policies
from planning.disruption.validation import Decision, Mismatch, Verdict, same_decision
from planning.planner.plan import plan
from planning.planner.recheck import Recheck, recheck_consolidation, recheck_spot_return
from planning.pricing.unavailable_offerings import UnavailableOfferings, with_unavailable
from telemetry import karpenter_metrics as km
from telemetry import metrics

IN_FLIGHT_QUERY = ("ExecutionStatus = 'Running' AND "
                   "(WorkflowType = 'DisruptionWorkflow' OR WorkflowType = 'TerminationWorkflow')")


def in_flight_query(task_queue: str) -> str:
    """Running disruptions and terminations of this installation only: its task queue. Another installation
    sharing the namespace (another cluster, or a test beside this one) has nodes of the same names, which must
    not be taken for ours and left out of planning."""
    return f"{IN_FLIGHT_QUERY} AND TaskQueue = '{task_queue.replace(chr(39), '')}'"
MEMO_NODES = "nodes"
MEMO_METHOD = "method"  # a DisruptionWorkflow's planning method, for the demo's tally
MEMO_PLACEMENTS = "placements"  # a DisruptionWorkflow's DisruptionCommand.placements, reserved while it runs
ORPHAN_GRACE = timedelta(seconds=60)
CACHE_WAIT_SECONDS = 2.0  # how long an attempt waits for a stale cache to become healthy
CACHE_ATTEMPTS = 3  # attempts 1..N-1 fail (retryable) on a stale cache; attempt N skips. Planner retries allow >= 5


class ClusterSource(Protocol):
    """The worker's watch cache as the planner reads it (runtime/cluster_view.py ClusterView)."""

    async def wait_healthy(self, timeout: float) -> Any:
        """Truthy once fresh; else (after `timeout`) falsy with `reason` (PassSkipped's values), `kind`, `detail`."""
        ...

    def read(self) -> tuple[list[dict[str, Any]], Any, Any]:
        """Every object (KubeClient.cluster_objects() order), their api.snapshot.Snapshot, and its pods and
        NodeClaims parsed (planning.cluster.Parsed), kept between reads."""
        ...


class StaleCluster(Exception):
    """The cache could not be trusted within CACHE_WAIT_SECONDS."""

    def __init__(self, health: Any) -> None:
        super().__init__(f"{health.reason} {health.kind}: {health.detail}".strip())
        self.reason = PassSkipped(str(health.reason))


# ---- pure helpers (unit-tested without servers) -------------------------------------------------------------

def _untainted(node: dict[str, Any]) -> dict[str, Any]:
    spec = dict(node.get("spec") or {})
    spec["taints"] = without_disrupted_taint(spec.get("taints") or [])
    return {**node, "spec": spec}


def paused_node_pools(objs: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objs if o.get("kind") == "NodePool"
            and ((o["metadata"].get("annotations") or {}).get(labels.PAUSED_ANNOTATION, "").lower() == "true")}


def replacement_nodes(objs: list[dict[str, Any]], running_ids: set[str]) -> set[str]:
    """Nodes launched as replacements by a disruption that is still running. They are part of that command:
    until its candidates are gone the pods meant for them have not arrived, so they look empty and must not
    be consolidated away (Karpenter protects them by nominating them for the pods it reschedules)."""
    out: set[str] = set()
    for o in objs:
        if o.get("kind") != "NodeClaim":
            continue
        key = ((o.get("metadata") or {}).get("annotations") or {}).get(labels.DISRUPTION_ANNOTATION, "")
        node = (o.get("status") or {}).get("nodeName")
        if key and node and key.split("/", 1)[0] in running_ids:
            out.add(node)
    return out


def tainted_nodes(objs: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objs if o.get("kind") == "Node"
            and labels.disrupted_taint_in((o.get("spec") or {}).get("taints"))}


def orphaned_taints(objs: list[dict[str, Any]], in_flight_names: set[str], in_flight_uids: set[str],
                    now: datetime, grace: timedelta = ORPHAN_GRACE) -> list[str]:
    """Nodes whose disrupted taint no running workflow owns (a disruption that failed mid-way), older than
    `grace` so a disruption that has just started but is not yet visible in Temporal is never undone."""
    out = []
    for o in objs:
        if o.get("kind") != "Node" or o["metadata"].get("deletionTimestamp"):
            continue
        meta = o["metadata"]
        if meta["name"] in in_flight_names or meta.get("uid") in in_flight_uids:
            continue
        for t in (o.get("spec") or {}).get("taints") or []:
            if t.get("key") != labels.DISRUPTED_TAINT_KEY:
                continue
            added = parse_time(t.get("timeAdded"))
            if added is None or now - added >= grace:
                out.append(meta["name"])
            break
    return sorted(out)


class NodeIndex(Mapping[str, NodeRef]):
    """Node name -> NodeRef, built on lookup: a pass looks up a handful of its 5,000 nodes, and validating a
    model (or even making a dict) per node cost a noticeable share of a steady pass."""

    def __init__(self, nodes: dict[str, dict[str, Any]], claims_by_node: dict[str, str],
                 claims_by_pid: dict[str, str]) -> None:
        self._nodes = nodes
        self._by_node, self._by_pid = claims_by_node, claims_by_pid

    def _fields(self, name: str) -> dict[str, Any]:
        o = self._nodes[name]
        meta = o["metadata"]
        pid = (o.get("spec") or {}).get("providerID")
        return dict(name=meta["name"], uid=meta.get("uid") or meta["name"], provider_id=pid,
                    node_claim=self._by_node.get(meta["name"]) or (self._by_pid.get(pid) if pid else None),
                    node_pool=(meta.get("labels") or {}).get(labels.NODEPOOL_LABEL))

    def __getitem__(self, name: str) -> NodeRef:
        return NodeRef(**self._fields(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def named_by_uid(self, uids: set[str]) -> set[str]:
        """The names of the nodes whose uid is in `uids`."""
        if not uids:
            return set()
        return {name for name, o in self._nodes.items() if (o["metadata"].get("uid") or name) in uids}


def node_index(objs: list[dict[str, Any]]) -> NodeIndex:
    """Node name -> NodeRef (uid, NodeClaim, providerID, pool), joining NodeClaims by nodeName/providerID."""
    claims_by_node: dict[str, str] = {}
    claims_by_pid: dict[str, str] = {}
    nodes: dict[str, dict[str, Any]] = {}
    for o in objs:
        kind = o.get("kind")
        if kind == "Node":
            nodes[o["metadata"]["name"]] = o
        elif kind == "NodeClaim":
            st = o.get("status") or {}
            if st.get("nodeName"):
                claims_by_node[st["nodeName"]] = o["metadata"]["name"]
            if st.get("providerID"):
                claims_by_pid[st["providerID"]] = o["metadata"]["name"]
    return NodeIndex(nodes, claims_by_node, claims_by_pid)


def to_replacement(r: Any) -> Replacement:
    """planning.disruption.commands.Replacement -> the workflows' Replacement (the planner's, the provisioner's and the
    spot pre-spin's launches all travel as this)."""
    return Replacement(instance_types=list(r.instance_types), capacity_type=r.capacity_type, price=r.price,
                       zone=r.zone, requirements=[q.model_dump() for q in (r.requirements or [])])


def to_command(cmd: Any, index: Mapping[str, NodeRef]) -> DisruptionCommand:
    """planning.disruption.commands.Command -> the workflow's DisruptionCommand (uids from the command or the index)."""
    refs = []
    for i, name in enumerate(cmd.nodes):
        ref = index.get(name, NodeRef(name=name, uid=name)).model_copy()
        if i < len(cmd.node_uids) and cmd.node_uids[i]:
            ref.uid = cmd.node_uids[i]
        if i < len(cmd.node_claims) and cmd.node_claims[i]:
            ref.node_claim = cmd.node_claims[i]
        if i < len(cmd.provider_ids) and cmd.provider_ids[i]:
            ref.provider_id = cmd.provider_ids[i]
        ref.node_pool = ref.node_pool or cmd.node_pool
        refs.append(ref)
    return DisruptionCommand(method=cmd.method, reason=cmd.reason, node_pool=cmd.node_pool, nodes=refs,
                             replacements=[to_replacement(r) for r in cmd.replacements],
                             savings_per_hour=cmd.savings_per_hour, pods=len(cmd.pods),
                             placements=placements_of(cmd.pods, index))


def placements_of(moves: Iterable[Any], index: Mapping[str, NodeRef]) -> dict[str, list[str]]:
    """A command's simulated pod moves as DisruptionCommand.placements: node name -> pod keys, "" for a
    destination that is no node of the cluster (one of the command's replacements)."""
    placements: dict[str, list[str]] = {}
    for move in moves:
        placements.setdefault(move.to if move.to in index else "", []).append(move.pod)
    return placements


def as_delete(ours: DisruptionCommand, fresh: Any, index: Mapping[str, NodeRef]) -> DisruptionCommand:
    """`ours` carried out as validation's fresh delete of the same candidates (Mismatch.REPLACEMENT_NOT_NEEDED): no
    replacement, the delete's savings, and the pods placed where the fresh simulation put them."""
    return ours.model_copy(update={"replacements": [], "savings_per_hour": fresh.savings_per_hour,
                                   "pods": len(fresh.pods), "placements": placements_of(fresh.pods, index)})


def planned_pods(placements: Mapping[str, Sequence[str]], into: dict[str, str]) -> dict[str, str]:
    """DisruptionCommand.placements (node -> pod keys) added to `into` (pod key -> node), as the Scheduler reads
    them."""
    for node, pods in placements.items():
        for key in pods:
            into[key] = node
    return into


def policy_metrics(result: Any) -> None:
    """DisruptionPolicy figures of a pass: the pools a calendar holds (gauge, reset each pass) and the consolidation
    moves a savings threshold skipped (docs/semantics.md §15)."""
    metrics.POLICY_HELD.clear()
    for p in getattr(result, "policy_pools", ()):
        if p.hold:
            metrics.POLICY_HELD.labels(nodepool=p.node_pool, hold=p.hold).set(1)
    for m in getattr(result, "skipped", ()):
        metrics.CONSOLIDATION_SKIPPED.labels(nodepool=m.node_pool).inc()


def scheduling_gauges(result: Any) -> None:
    """The pass's v1.15 scheduling inputs (planning/planner/plan.py scheduling_counts): default spread, in-place
    resize, volume attachment limits. Karpenter has no metric for them; a pass without counts leaves them as they
    were."""
    counts = getattr(result, "scheduling_counts", None) or {}
    if not counts:
        return
    metrics.SCHEDULING_DEFAULT_SPREAD_PODS.set(counts.get("defaultSpreadPods", 0))
    metrics.SCHEDULING_PODS_RESIZING.set(counts.get("podsResizing", 0))
    metrics.SCHEDULING_VOLUME_LIMITED_PODS.set(counts.get("volumeLimitedPods", 0))


# disruption/{emptiness,multinodeconsolidation,singlenodeconsolidation}.go ConsolidationType(); drift has none
CONSOLIDATION_TYPES = {MethodName.EMPTINESS: "empty", MethodName.MULTI_NODE_CONSOLIDATION: "multi",
                       MethodName.SINGLE_NODE_CONSOLIDATION: "single"}
# the reason each method's eligible_nodes gauge carries (disruption/controller.go: strings.ToLower(Reason()))
ELIGIBLE_REASONS = {MethodName.EMPTINESS: "empty", MethodName.DRIFT: "drifted", MethodName.STATIC_DRIFT: "drifted",
                    MethodName.MULTI_NODE_CONSOLIDATION: "underutilized",
                    MethodName.SINGLE_NODE_CONSOLIDATION: "underutilized",
                    MethodName.REPAIR: "unhealthy"}  # v1.15's repair method (kubernetes-sigs/karpenter#3311)


def karpenter_pass(result: Any, seconds: float) -> None:
    """Karpenter's gauges of a disruption pass: eligible nodes per reason, each pool's allowed disruptions and the
    nodes consuming its budget; the pass's evaluation and scheduling-simulation time (docs/semantics.md §19)."""
    eligible: dict[str, int] = {}
    for method, count in (getattr(result, "eligible", None) or {}).items():
        reason = ELIGIBLE_REASONS.get(method)
        if reason is not None:  # single and multi see the same candidates: the larger count
            eligible[reason] = max(eligible.get(reason, 0), count)
    for reason, count in eligible.items():
        km.ELIGIBLE_NODES.labels(reason=reason).set(count)
    for row in result.budgets:
        pool, reason = row.get("nodePool", ""), row.get("reason", "")
        disrupting = int(row.get("disrupting", 0))
        # api/budgets.py `allowed` has the disrupting nodes taken off; Karpenter's gauge is the budget itself
        km.ALLOWED_DISRUPTIONS.labels(nodepool=pool, reason=reason).set(int(row.get("allowed", 0)) + disrupting)
        km.NODES_CONSUMING_BUDGETS.labels(nodepool=pool, reason=reason).set(disrupting)
    km.EVALUATION_DURATION.labels(reason="", consolidation_type="").observe(seconds)
    km.SCHEDULING_DURATION.labels(controller="disruption").observe(seconds)


def karpenter_decision(method: str, reason: str, decision: str, node_pool: str) -> None:
    """karpenter_voluntary_disruption_decisions_total (and by nodepool) for a command the pass starts."""
    if method not in CONSOLIDATION_TYPES and method not in UNVALIDATED_METHODS:
        return  # expiration, legacy repair and static scale-down are not voluntary disruption decisions
    labels = {"decision": km.CommandDecision(decision).value, "reason": reason.lower(),
              "consolidation_type": CONSOLIDATION_TYPES.get(method, "")}
    km.DECISIONS.labels(**labels).inc()
    km.DECISIONS_BY_NODEPOOL.labels(nodepool=node_pool, **labels).inc()


def karpenter_approvals(result: Any) -> None:
    """karpenter_consolidation_moves_total and karpenter_consolidation_score: each Balanced pool's score of each
    consolidation move the pass evaluated, approved or rejected (docs/semantics.md §5.10, §19.1)."""
    for m in getattr(result, "scored_moves", None) or ():
        decision = km.ApprovalDecision.APPROVED if m.approved else km.ApprovalDecision.REJECTED
        labels = {"decision": decision.value, "nodepool": m.node_pool, "policy": m.policy}
        km.CONSOLIDATION_MOVES.labels(**labels).inc()
        km.CONSOLIDATION_SCORE.labels(**labels).observe(m.score)


def _take_repairs(result: Any, index: Mapping[str, NodeRef], excluded: set[str], out: PlanPassResult) -> None:
    """Node repairs and the pools the safety valve holds back, into the pass result and the metrics."""
    for r in result.repairs:
        if r.node in index and r.node not in excluded:
            out.repairs.append(index[r.node])
            metrics.NODE_REPAIRS.labels(nodepool=r.node_pool, condition=r.policy.condition).inc()
            km.UNHEALTHY_DISRUPTED.labels(condition=r.policy.condition, nodepool=r.node_pool, capacity_type="",
                                          image_id="").inc()
    for b in result.repairs_blocked:
        out.repairs_blocked.append(b.node_pool)
        if b.reason is RepairBlockReason.ZONE_OUTAGE:
            metrics.NODE_REPAIRS_ZONE_HELD.labels(nodepool=b.node_pool, zone=b.zone).inc()
        elif b.reason is RepairBlockReason.DISABLED:
            metrics.NODE_REPAIRS_DISABLED.labels(nodepool=b.node_pool).inc()
        else:
            metrics.NODE_REPAIRS_BLOCKED.labels(nodepool=b.node_pool).inc()
    for r in result.repairs_vetoed:
        metrics.NODE_REPAIRS_VETOED.labels(nodepool=r.node_pool).inc()


def _take_static(result: Any, index: Mapping[str, NodeRef], excluded: set[str], out: PlanPassResult) -> None:
    """Static NodePools' scale-ups (a template NodeClaim and how many) and the nodes their scale-downs remove."""
    for p in result.static_node_pools:
        r = p.replacement
        if p.launch and r is not None:
            rep = to_replacement(r)
            out.static_scale_ups.append(StaticScaleUp(node_pool=p.node_pool, count=p.launch, replacement=rep,
                                                      node_pool_uid=p.node_pool_uid))
        for rm in p.remove:
            if rm.node in index and rm.node not in excluded:
                out.static_removals.append(index[rm.node])


@dataclass
class ClusterRead:
    """What a pass or a validation read: every object, the nodes, what to leave alone; from the cache, also the
    snapshot and its parsed parts (a LIST's objects are loaded by the planner instead)."""

    objs: list[dict[str, Any]]
    index: NodeIndex
    excluded: set[str]
    paused: set[str]
    released: list[str]
    snapshot: Any = None
    parsed: Any = None
    planned: dict[str, str] = field(default_factory=dict)  # where in-flight commands planned their pods

    def planning_snapshot(self) -> Any:
        """The cache's snapshot, or one loaded from the LISTed objects."""
        return self.snapshot if self.snapshot is not None else Snapshot.from_objects(self.objs)

    def untaint(self, names: set[str]) -> None:
        """Plan on the nodes whose leftover taint was just removed as they now are."""
        def fix(o: dict[str, Any]) -> dict[str, Any]:
            return _untainted(o) if o.get("kind") == "Node" and o["metadata"]["name"] in names else o
        self.objs = [fix(o) for o in self.objs]
        if self.snapshot is not None:
            self.snapshot.nodes = [fix(o) for o in self.snapshot.nodes]


class PlanningActivities:
    """Clients come in: the Kubernetes gateway, the Temporal client (visibility), the catalog, events."""

    def __init__(self, kube: KubeClient, temporal_client: Client | None = None,
                 catalog: InstanceTypeCatalog | None = None, events: EventActivities | None = None,
                 cluster: ClusterSource | None = None, repair: Sequence[RepairPolicy] = DEFAULT_POLICIES,
                 offerings: UnavailableOfferings | None = None) -> None:
        self._kube = kube
        self._offerings = offerings  # offerings EC2 refused lately: planned on as unavailable (docs/semantics.md §16.1)
        self._repair = as_policies(repair)  # node repair policies and mode (planning/disruption/repair.py); empty: off
        self._cluster = cluster  # None: LIST every kind on each read (nodeflow plan, tests, --no-cluster-cache)
        self._client = temporal_client
        self._catalog = catalog
        self._events = events

    def _catalog_for(self, path: str | None) -> InstanceTypeCatalog | None:
        return with_unavailable(load_catalog(path) if path else self._catalog, self._offerings)

    async def _in_flight(self, own_workflow_id: str | None
                         ) -> tuple[set[str], set[str], set[str], dict[str, str]]:
        """(node names, node uids, workflow ids, where their commands planned their pods: pod key -> node) of
        running disruption/termination workflows other than ours."""
        client = self._client or activity.client()
        names: set[str] = set()
        uids: set[str] = set()
        ids: set[str] = set()
        planned: dict[str, str] = {}
        async for wf in client.list_workflows(in_flight_query(activity.info().task_queue)):
            if wf.id == own_workflow_id:
                continue
            ids.add(wf.id)
            for prefix in ("disrupt-", "terminate-"):
                if wf.id.startswith(prefix):
                    uids.add(wf.id[len(prefix):])
            memo = await wf.memo()
            names.update(memo.get(MEMO_NODES) or [])
            planned_pods(memo.get(MEMO_PLACEMENTS) or {}, planned)
        return names, uids, ids, planned

    async def _read(self) -> tuple[list[dict[str, Any]], Any, Any]:
        """The cluster's objects; from the cache, also their Snapshot and parsed parts (else None, None)."""
        if self._cluster is None:
            return await asyncio.to_thread(self._kube.cluster_objects), None, None
        health = await self._cluster.wait_healthy(CACHE_WAIT_SECONDS)
        if not health:
            raise StaleCluster(health)
        return await asyncio.to_thread(self._cluster.read)

    async def read_cluster(self) -> tuple[list[dict[str, Any]], Any, Any]:
        """`_read` for the other activities that plan on the cluster (provisioning, spot sizing): a stale cache
        fails the attempt, retryably, for Temporal to try again (on a worker whose cache is fresh)."""
        try:
            return await self._read()
        except StaleCluster as exc:
            raise ApplicationError(f"cluster cache not fresh: {exc}", type=ErrorType.CLUSTER_CACHE_NOT_READY) from exc

    async def planning_read(self, catalog_path: str | None) -> tuple[ClusterRead, InstanceTypeCatalog | None]:
        """The cluster as a pass plans on it (in-flight nodes excluded) and the catalog, for other activities that
        plan (drift rollouts); a stale cache fails the attempt, retryably."""
        try:
            return await self._snapshot(None), self._catalog_for(catalog_path)
        except StaleCluster as exc:
            raise ApplicationError(f"cluster cache not fresh: {exc}", type=ErrorType.CLUSTER_CACHE_NOT_READY) from exc

    def _stale(self, exc: StaleCluster, what: str) -> None:
        """Fail this attempt for Temporal to retry, unless it is the last one the caller then skips (logged and
        counted either way)."""
        last = activity.info().attempt >= CACHE_ATTEMPTS
        outcome = "skipped" if last else "retried"
        metrics.PLANNER_PASSES_SKIPPED.labels(reason=exc.reason.value, outcome=outcome).inc()
        activity.logger.warning("%s: cluster cache not fresh (%s); %s", what, exc, outcome)
        if not last:
            raise ApplicationError(f"cluster cache not fresh: {exc}", type=ErrorType.CLUSTER_CACHE_NOT_READY) from exc

    async def _snapshot(self, own_workflow_id: str | None, release_before: datetime | None = None) -> ClusterRead:
        """The cluster, the excluded node names and the paused pools. With `release_before` (a planner pass),
        disrupted taints that no running workflow owns are removed first, as Karpenter's loop does
        (docs/semantics.md §2, docs/decisions.md §6)."""
        objs, snapshot, parsed = await self._read()
        # what the checks below read (not 72k pods), picked in C, by kind: each check walks its kinds only
        kinds = (*map(dict.get, objs, repeat("kind")),)
        nodes, claims, pools = ([*compress(objs, map(eq, kinds, repeat(k)))] for k in ("Node", "NodeClaim", "NodePool"))
        names, uids, ids, planned = await self._in_flight(own_workflow_id)
        names |= replacement_nodes(claims, ids)
        index = node_index(nodes + claims)
        released: set[str] = set()
        if release_before is not None:
            for name in orphaned_taints(nodes, names, uids, release_before):
                if await asyncio.to_thread(self._release, name):
                    released.add(name)
        excluded = (tainted_nodes(nodes) - released) | {n for n in names if n in index} | \
            index.named_by_uid(uids)
        # Paused NodePools are not excluded here: planning blocks their nodes itself and says why.
        read = ClusterRead(objs, index, excluded, paused_node_pools(pools), sorted(released), snapshot, parsed,
                           planned)
        if released:
            read.untaint(released)
        return read

    def _release(self, name: str) -> bool:
        """Untaint one node no disruption owns any more (a deleting one keeps its taint for its termination)."""
        try:
            return self._kube.untaint(name)
        except Exception as exc:  # best effort: the next pass tries again
            activity.logger.warning("could not remove the leftover taint of %s: %s", name, exc)
            return False

    def _plan(self, read: ClusterRead, at: datetime, catalog_path: str | None) -> Any:
        """Plan on the cache's snapshot and parsed parts (a steady pass re-parses only what changed), or load the
        LISTed objects."""

        return plan(read.planning_snapshot(), at, catalog=self._catalog_for(catalog_path), exclude_nodes=read.excluded,
                    parsed=read.parsed, repair=self._repair, planned=read.planned)

    def _recheck(self, read: ClusterRead, inp: ValidateInput, decision: Decision) -> Recheck:
        """A consolidation (or SpotReturn) command re-simulated on its own candidates
        (planning/disruption/validation.py)."""
        args = (read.planning_snapshot(), inp.at, [n.name for n in inp.command.nodes], decision)
        kwargs = dict(catalog=self._catalog_for(inp.catalog_path), exclude=read.excluded, parsed=read.parsed,
                      repair=self._repair, planned=read.planned)
        if inp.command.method == MethodName.SPOT_RETURN:
            return Recheck(recheck_spot_return(*args, **kwargs))
        return recheck_consolidation(*args, **kwargs)

    @activity.defn(name="planner_pass")
    async def plan_pass(self, inp: PlanPassInput) -> PlanPassResult:
        """Heartbeats while it reads and plans: a pass whose worker died is retried within the heartbeat
        timeout instead of holding the (overlap SKIP) schedule for the whole start-to-close timeout."""
        try:
            return await heartbeating(self._plan_pass(inp))
        except Exception as exc:  # counted for the planner-failing alert; Temporal retries the pass
            if not (isinstance(exc, ApplicationError) and exc.type == ErrorType.CLUSTER_CACHE_NOT_READY):
                metrics.PLANNER_PASS_ERRORS.labels(error=type(exc).__name__).inc()
            raise

    async def _plan_pass(self, inp: PlanPassInput) -> PlanPassResult:
        try:
            read = await self._snapshot(None, release_before=inp.at)
        except StaleCluster as exc:
            self._stale(exc, "planner pass")
            metrics.PLANNER_PASSES.labels(result="skipped").inc()
            return PlanPassResult(skipped=exc.reason, skipped_detail=str(exc))
        read.excluded |= read.index.named_by_uid(set(inp.exclude_uids))
        planned_pods(inp.placements, read.planned)
        started = time.perf_counter()
        result = await asyncio.to_thread(self._plan, read, inp.at, inp.catalog_path)
        karpenter_pass(result, time.perf_counter() - started)
        karpenter_approvals(result)
        index, excluded, paused = read.index, read.excluded, read.paused
        out = PlanPassResult(excluded_nodes=sorted(excluded), paused_node_pools=sorted(paused), nodes=len(index),
                             released=read.released,
                             blocked=[BlockedNode(node=b.node, reason=b.reason) for b in result.blocked])
        for c in result.commands:
            if any(n in excluded for n in c.nodes):
                continue
            cmd = to_command(c, index)
            metrics.DISRUPTION_DECISIONS.labels(method=c.method, reason=c.reason, decision=cmd.decision).inc()
            if not validated(c.method):  # a validated command counts for Karpenter once its validation passes
                karpenter_decision(c.method, c.reason, cmd.decision, c.node_pool)
            if c.method == MethodName.EXPIRATION:
                out.expirations += cmd.nodes
            else:
                out.commands.append(cmd)

        out.commands, out.policies, out.rollouts = divert_drift(read, out.commands)
        if out.rollouts and not out.commands:  # the pass's drift went to rollouts: plan the other pools' too
            out.commands = await asyncio.to_thread(self._plan_besides_rollouts, read, inp, out)
        _take_repairs(result, index, excluded, out)
        _take_static(result, index, excluded, out)
        for pool, count in Counter(b.node_pool or "" for b in result.blocked).items():  # one inc per pool
            metrics.DISRUPTION_BLOCKED.labels(nodepool=pool).inc(count)
        metrics.PLANNER_ELIGIBLE_NODES.set(len(index))
        for row in result.budgets:
            metrics.ALLOWED_DISRUPTIONS.labels(nodepool=row.get("nodePool", ""), reason=row.get("reason", "")).set(
                row.get("allowed", 0))
        policy_metrics(result)
        scheduling_gauges(result)
        acted = bool(out.commands or out.expirations or out.repairs or out.static_scale_ups or out.static_removals)
        outcome = "paused" if paused and not acted else ("commands" if acted else "idle")
        metrics.PLANNER_PASSES.labels(result=outcome).inc()
        await self._publish(result, index)
        return out

    def _plan_besides_rollouts(self, read: ClusterRead, inp: PlanPassInput, out: PlanPassResult
                               ) -> list[DisruptionCommand]:
        """Plan again without the drifted nodes of pools whose drift goes in waves (docs/semantics.md §15.2)."""
        from dataclasses import replace

        skip = wave_pools_drifted(read, self._catalog_for(inp.catalog_path), {r.node_pool for r in out.rollouts},
                                  inp.at)
        again = replace(read, excluded=read.excluded | skip)
        result = self._plan(again, inp.at, inp.catalog_path)
        cmds = [to_command(c, read.index) for c in result.commands
                if c.method != MethodName.EXPIRATION and not any(n in again.excluded for n in c.nodes)]
        return divert_drift(again, cmds)[0]

    async def _publish(self, result: Any, index: Mapping[str, NodeRef]) -> None:
        if self._events is None or not result.events:
            return
        specs = [EventSpec(kind=e.kind, name=e.name, reason=e.reason, message=e.message, type=e.type,
                           uid=index[e.name].uid if e.kind == "Node" and e.name in index else None,
                           namespace=e.namespace)
                 for e in result.events]
        events = self._events.fresh(specs)
        if events:
            try:
                await asyncio.to_thread(self._events._create_all, events)
            except Exception as exc:  # explanations are best effort; never fail a pass over them
                activity.logger.warning("could not record planner events: %s", exc)

    @activity.defn(name="disruption_validate")
    async def validate_command(self, inp: ValidateInput) -> ValidationResult:
        """Karpenter's validation: after the delay, re-plan and require the same decision for these nodes."""
        outcome, reason, instead = await heartbeating(self._validate_command(inp))
        metrics.DISRUPTION_VALIDATIONS.labels(method=inp.command.method, result=outcome.value).inc()
        if not outcome.valid:  # Karpenter counts each candidate of a failed validation
            km.FAILED_VALIDATIONS.labels(consolidation_type=CONSOLIDATION_TYPES.get(inp.command.method, "")).inc(
                len(inp.command.nodes))
        else:  # Karpenter counts a decision once validated, as what is carried out (a replace may become a delete)
            done = instead or inp.command
            karpenter_decision(done.method, done.reason, done.decision, done.node_pool)
        return ValidationResult(valid=outcome.valid, reason=reason, command=instead)

    async def _validate_command(self, inp: ValidateInput) -> tuple[Verdict, str, DisruptionCommand | None]:
        """(typed verdict, the message a user reads, the command to carry out instead, if any) for a command about
        to be tainted."""
        try:
            read = await self._snapshot(inp.own_workflow_id)
        except StaleCluster as exc:
            self._stale(exc, "validation")
            return Verdict.CACHE_STALE, f"cluster cache not fresh: {exc}", None
        ours = inp.command
        if ours.node_pool in read.paused:
            return Verdict.POOL_PAUSED, f"NodePool {ours.node_pool} is paused", None
        for n in ours.nodes:
            ref = read.index.get(n.name)
            if ref is None or ref.uid != n.uid:
                return Verdict.CANDIDATE_GONE, f"candidate {n.name} is gone", None
            if n.name in read.excluded:
                return Verdict.CANDIDATE_IN_FLIGHT, f"candidate {n.name} is already being disrupted", None
        decision = Decision.of(ours.method, {n.name for n in ours.nodes}, ours.replacements)
        try:
            rechecked = ours.method in CONSOLIDATION_METHODS and len(ours.replacements) <= 1
            if rechecked or ours.method == MethodName.SPOT_RETURN:
                checked = await asyncio.to_thread(self._recheck, read, inp, decision)
            else:
                checked = Recheck(await asyncio.to_thread(self._replanned, read, inp, decision))
        except Exception as exc:
            raise ApplicationError(f"planning failed: {exc}") from exc
        problem = checked.mismatch
        if problem is None:
            return Verdict.VALID, "", None
        instead = None
        if problem is Mismatch.REPLACEMENT_NOT_NEEDED and checked.fresh is not None:
            instead = as_delete(ours, checked.fresh, read.index)
        return Verdict.of(problem), checked.message, instead

    def _replanned(self, read: ClusterRead, inp: ValidateInput, decision: Decision) -> Mismatch | None:
        """A command other than a consolidation's: a fresh pass must make the same decision for these nodes."""
        ours = inp.command
        result = self._plan(read, inp.at, inp.catalog_path)
        why: Mismatch | None = Mismatch.NOT_CHOSEN
        for c in result.commands:
            if c.method != ours.method or not decision.nodes & set(c.nodes):
                continue
            why = same_decision(decision, Decision.of(c.method, c.nodes, c.replacements))
            if why is None:
                return None
        return why
