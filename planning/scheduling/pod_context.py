"""The simulation's checks beyond its fast path: pod affinity and anti-affinity on any key, spread on other keys,
host ports and PreferNoSchedule taints (while a pod's preferences are still required).

For each pod the Scheduler places it builds one `PodContext` from the pods placed so far (the cluster's, less
removed nodes', plus the simulation's, on existing and new nodes): the domains where the pod's affinity terms
are met, those its anti-affinity terms or others' anti-affinity rule out, and its spread counts. Each node is
then an O(terms) lookup, so the block/super-block first fit stays a scan of cheap checks. Rules as in
pod_affinity.py and topology_spread.py (kube InterPodAffinity / PodTopologySpread, Karpenter
topology.go); docs/semantics.md §3.5.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api import labels as L
from planning.cluster import Cluster, NodeInfo, PodInfo
from planning.scheduling.host_ports import HostPort, conflicts
from planning.scheduling.pod_affinity import PodTerm, matches_all
from planning.scheduling.sim_state import NewNode, SimState
from planning.scheduling.topology_spread import SpreadRule, counts_pod, skew_ok
from planning.selectors import tolerates

Where = tuple[Mapping[str, str], PodInfo]  # a placed pod with its node's labels
Eligible = Callable[[PodInfo, SpreadRule, str], bool]  # whether a node (by name) counts for a spread rule


@dataclass
class PodContext:
    """What the placed pods allow one pod, per topology domain."""

    aff_values: list[set[str]] = field(default_factory=list)  # per affinity term: domains holding a match
    aff_free: bool = False  # no pod matches the affinity terms and the pod matches them itself
    anti_values: list[set[str]] = field(default_factory=list)  # per anti-affinity term: domains holding a match
    sym_blocked: dict[str, set[str]] = field(default_factory=dict)  # key -> domains others' anti-affinity rules out
    spread_counts: list[dict[str, int]] = field(default_factory=list)  # per spread rule: matching pods per domain


def ports_of(pod: PodInfo) -> frozenset[HostPort]:
    return pod.more.host_ports if pod.more is not None else frozenset()


def anti_of(pod: PodInfo) -> tuple[PodTerm, ...]:
    return pod.more.anti_terms if pod.more is not None else ()


def needs_context(pod: PodInfo) -> bool:
    m = pod.more
    return m is not None and bool(m.pod_affinity or m.anti_terms or m.spread_rules)


def _holders(node: NodeInfo) -> list[PodInfo]:
    """The node's active pods with anti-affinity terms: carried between passes while it holds the same pods
    (planning/node_pods_memo.py), as every pass asks this of every node."""
    pods, memo = node.pods, node.pods_memo

    def holders() -> list[PodInfo]:
        return [p for p in pods if p.active and anti_of(p)]

    return holders() if memo is None else memo.get("anti", node.name, pods, holders)


class MoreChecks:
    """Built once per Scheduler: the existing pods whose anti-affinity other pods must respect."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        # the same for every Scheduler of a pass (each walks every pod): made once per Cluster, read-only after
        memo = cluster.memo.get("more_checks")
        if memo is None:
            memo = cluster.memo["more_checks"] = (
                [(n.labels, p) for n in cluster.nodes for p in _holders(n)],
                any(t.get("effect") == "PreferNoSchedule" for n in cluster.nodes for t in n.taints) or any(
                    t.get("effect") == "PreferNoSchedule" for p in cluster.pools.values() for t in p.taints))
        self.holders: list[Where] = memo[0]
        self.any_pns: bool = memo[1]

    # ---- the pods placed so far ----------------------------------------------------------------

    def new_node_labels(self, nn: NewNode, state: SimState) -> dict[str, str]:
        labels = {**nn.labels, L.HOSTNAME_LABEL: nn.name}
        zone = state.new_zones.get(nn.name)
        if zone is not None:
            labels[L.ZONE_LABEL] = zone
        return labels

    def _simulated(self, state: SimState) -> Iterator[tuple[str, Mapping[str, str], PodInfo]]:
        for name, pods in state.placed.items():
            node = self.cluster.by_name.get(name)
            if node is not None and name not in state.removed:
                yield from ((name, node.labels, p) for p in pods)
        for nn in state.new_nodes:
            labels = self.new_node_labels(nn, state)
            yield from ((nn.name, labels, p) for p in nn.pods)

    def _candidates(self, term: PodTerm, state: SimState) -> Iterator[tuple[str, Mapping[str, str], PodInfo]]:
        """(node name, node labels, pod) of the placed pods that may match `term` (the cluster's through its label
        index when the namespaces are known)."""
        if term.ns_selector is None and term.selector is not None:
            for ns in term.namespaces:
                for p in self.cluster.matching_pods(ns, dict(term.selector)):
                    node = self.cluster.by_name.get(p.node_name)
                    if node is not None and node.name not in state.removed:
                        yield node.name, node.labels, p
        else:
            for n in self.cluster.nodes:
                if n.name not in state.removed:
                    yield from ((n.name, n.labels, p) for p in n.pods if p.active)
        yield from self._simulated(state)

    # ---- one pod's context -----------------------------------------------------------------------

    def context(self, pod: PodInfo, state: SimState, eligible: Eligible) -> PodContext:
        ctx = PodContext()
        m = pod.more
        if m is not None and m.pod_affinity:
            self._affinity(pod, m.pod_affinity, state, ctx)
        for t in anti_of(pod):
            ctx.anti_values.append({labels[t.key] for _, labels, p in self._candidates(t, state)
                                    if t.key in labels and p.key != pod.key and t.matches(p.namespace, p.labels)})
        self._symmetric(pod, state, ctx)
        for rule in m.spread_rules if m is not None else ():
            ctx.spread_counts.append(self._spread_counts(pod, rule, state, eligible))
        return ctx

    def _affinity(self, pod: PodInfo, terms: Sequence[PodTerm], state: SimState, ctx: PodContext) -> None:
        ctx.aff_values = [set() for _ in terms]
        found = False
        for _, labels, p in self._candidates(terms[0], state):
            if p.key == pod.key or not matches_all(terms, p.namespace, p.labels):
                continue
            found = True
            for i, t in enumerate(terms):
                if t.key in labels:
                    ctx.aff_values[i].add(labels[t.key])
        ctx.aff_free = not found and matches_all(terms, pod.namespace, pod.labels)

    def _symmetric(self, pod: PodInfo, state: SimState, ctx: PodContext) -> None:
        holders: list[Where] = [h for h in self.holders if h[1].node_name not in state.removed]
        holders += [(labels, p) for _, labels, p in self._simulated(state) if anti_of(p)]
        for labels, p in holders:
            for t in anti_of(p):
                if t.key in labels and p.key != pod.key and t.matches(pod.namespace, pod.labels):
                    ctx.sym_blocked.setdefault(t.key, set()).add(labels[t.key])

    def _spread_counts(self, pod: PodInfo, rule: SpreadRule, state: SimState, eligible: Eligible) -> dict[str, int]:
        """Matching pods per domain, on the nodes the rule's nodeAffinityPolicy / nodeTaintsPolicy let count."""
        counts: dict[str, int] = {}
        if rule.selector is None:
            return counts
        term = PodTerm(rule.selector, rule.key, frozenset((pod.namespace,)))
        for name, labels, p in self._candidates(term, state):
            if rule.key in labels and p.active and p.key != pod.key and counts_pod(
                    rule, pod.namespace, p.namespace, p.labels) and eligible(pod, rule, name):
                counts[labels[rule.key]] = counts.get(labels[rule.key], 0) + 1
        return counts

    # ---- checks ------------------------------------------------------------------------------------

    def domains_ok(self, pod: PodInfo, ctx: PodContext, labels: Mapping[str, str],
                   domains: Mapping[str, set[str]]) -> bool:
        """Affinity, anti-affinity (both ways) and spread on a node with `labels`; `domains`: key -> the values a
        spread rule's key takes over the nodes the pod may use."""
        m = pod.more
        if m is not None and m.pod_affinity:
            if any(t.key not in labels for t in m.pod_affinity):
                return False
            met = all(labels[t.key] in ctx.aff_values[i] for i, t in enumerate(m.pod_affinity))
            if not met and not ctx.aff_free:
                return False
        for i, t in enumerate(anti_of(pod)):
            if t.key in labels and labels[t.key] in ctx.anti_values[i]:
                return False
        for key, blocked in ctx.sym_blocked.items():
            if key in labels and labels[key] in blocked:
                return False
        for i, rule in enumerate(m.spread_rules if m is not None else ()):
            if rule.key not in labels:
                return False
            self_match = counts_pod(rule, pod.namespace, pod.namespace, pod.labels)
            if not skew_ok(rule, self_match, ctx.spread_counts[i], domains.get(rule.key, set()) | {labels[rule.key]},
                           labels[rule.key]):
                return False
        return True

    @staticmethod
    def ports_ok(pod: PodInfo, others: Sequence[PodInfo]) -> bool:
        mine = ports_of(pod)
        return not mine or not conflicts(mine, (hp for p in others if p.active for hp in ports_of(p)))

    @staticmethod
    def pns_ok(pod: PodInfo, taints: Sequence[Mapping[str, Any]]) -> bool:
        """While strict, a PreferNoSchedule taint must be tolerated like a NoSchedule one."""
        if pod.more is None or not pod.more.strict_pns:
            return True
        return all(tolerates(pod.tolerations, t) for t in taints if t.get("effect") == "PreferNoSchedule")
