"""The Scheduler's checks beyond its fast path, on existing and new nodes: pod affinity and anti-affinity on any
key, spread on other keys (with nodeAffinityPolicy / nodeTaintsPolicy), host ports, and the one domain a new node
takes for each topology key a pod reads (Karpenter topology.go, hostportusage.go). A mixin of
planning/scheduling/simulation.py's Scheduler, whose caches and helpers it uses; the rules themselves live in
pod_context.py, pod_affinity.py and topology_spread.py. docs/semantics.md §3.5.
"""

from __future__ import annotations

from api import labels as L
from planning.cluster import Cluster, NodeInfo, PodInfo, PoolInfo, type_labels
from planning.scheduling.pod_context import MoreChecks, PodContext, needs_context
from planning.scheduling.sim_state import NewNode, SimState
from planning.scheduling.topology_spread import SpreadRule
from planning.scheduling.type_options import OFFERING_KEYS, TYPE_KEYS, TypeOption, option_label_values
from planning.selectors import match_node_selector_terms, tolerates_all


class DomainChecks:
    """Mixed into Scheduler (which sets these attributes)."""

    cluster: Cluster
    more: MoreChecks
    dest: list[NodeInfo]
    pools_by_weight: list[PoolInfo]
    _ctx_cache: dict[tuple[str, int, int, int], PodContext]
    _rule_domain_cache: dict[tuple[str, str, bool, bool], set[str]]

    def _node_pods(self, node_name: str, state: SimState) -> list[PodInfo]: ...
    def pool_labels(self, pool: PoolInfo) -> dict[str, str]: ...
    def _options(self, pool: PoolInfo) -> list[TypeOption]: ...
    def _pod_allowed(self, pod: PodInfo, pool: PoolInfo) -> set[tuple[str, str, str]] | None: ...
    def _base(self, pod: PodInfo) -> PodInfo: ...

    def _sym_possible(self, state: SimState) -> bool:
        """Whether some placed pod's anti-affinity (on a key other than hostname) may rule nodes out."""
        return bool(self.more.holders) or state.anti_placed

    def _ctx(self, pod: PodInfo, state: SimState) -> PodContext:
        key = (pod.key, id(pod.more), state.serial, state.version)
        ctx = self._ctx_cache.get(key)
        if ctx is None:
            if len(self._ctx_cache) > 4096:
                self._ctx_cache.clear()
            ctx = self._ctx_cache[key] = self.more.context(pod, state, self._spread_eligible)
        return ctx

    def _spread_eligible(self, pod: PodInfo, rule: SpreadRule, node_name: str) -> bool:
        """kube's nodeInclusionPolicy: whether a node's pods and domain count for the pod's spread `rule` (by the
        pod's own selection: a rung's preferences-as-requirements do not narrow the domains)."""
        pod = self._base(pod)
        node = self.cluster.by_name.get(node_name)
        if node is None:
            return True  # a new node of this simulation: its pool's taints and labels already admitted the pod
        if rule.honor_affinity and not (all(node.labels.get(k) == v for k, v in pod.node_selector.items())
                                        and match_node_selector_terms(pod.affinity_terms, node.labels)):
            return False
        return not rule.honor_taints or tolerates_all(pod.tolerations, node.taints)

    def _rule_domains(self, pod: PodInfo) -> dict[str, set[str]]:
        """Per key of the pod's other-key spread rules: the values over the nodes it may use, existing and new."""
        out: dict[str, set[str]] = {}
        base = self._base(pod)
        for rule in pod.more.spread_rules if pod.more is not None else ():
            cache_key = (base.sig, rule.key, rule.honor_affinity, rule.honor_taints)
            got = self._rule_domain_cache.get(cache_key)
            if got is None:
                got = {n.labels[rule.key] for n in self.cluster.nodes if rule.key in n.labels
                       and not n.marked_for_deletion and self._spread_eligible(pod, rule, n.name)}
                for pool in self.pools_by_weight:
                    got |= self._pool_domains(base, pool, rule.key)
                self._rule_domain_cache[cache_key] = got
            out[rule.key] = got
        return out

    def _pool_domains(self, pod: PodInfo, pool: PoolInfo, key: str) -> set[str]:
        """The values of `key` a new node of `pool` may take for the pod: its label, or what its types and offerings
        the pod allows offer (Karpenter counts the NodePools' domains, topology.go)."""
        fixed = self.pool_labels(pool)
        if key in fixed:
            return {fixed[key]}
        if key not in TYPE_KEYS or not tolerates_all(pod.tolerations, pool.taints):
            return set()
        allowed = self._pod_allowed(pod, pool)
        out: set[str] = set()
        for opt in self._options(pool):
            for o in opt.offerings:
                if allowed is None or (opt.itype.name, o.zone, o.capacity_type) in allowed:
                    out |= {o.zone} if key == L.ZONE_LABEL else {o.capacity_type} if key == L.CAPACITY_TYPE_LABEL \
                        else option_label_values(opt, key)
        return out

    def _more_ok(self, pod: PodInfo, node_name: str, labels: dict[str, str], state: SimState) -> bool:
        m = pod.more
        if m is not None and m.host_ports and not MoreChecks.ports_ok(pod, self._node_pods(node_name, state)):
            return False
        if not needs_context(pod) and not self._sym_possible(state):
            return True
        return self.more.domains_ok(pod, self._ctx(pod, state), labels, self._rule_domains(pod))

    @staticmethod
    def _domain_keys(pod: PodInfo, ctx: PodContext) -> set[str]:
        """The topology keys the pod's affinity, anti-affinity, other-key spread and others' anti-affinity read."""
        m = pod.more
        keys = {t.key for t in (*m.pod_affinity, *m.anti_terms)} | {r.key for r in m.spread_rules} if m else set()
        return keys | set(ctx.sym_blocked)

    def _zone_keyed(self, pod: PodInfo, ctx: PodContext) -> bool:
        return L.ZONE_LABEL in self._domain_keys(pod, ctx)

    def _new_node_offerings(self, pod: PodInfo, nn: NewNode, state: SimState) -> set[tuple[str, str, str]] | None:
        """(type, zone, capacity type) a new node may launch as for the pod's host ports, affinity, anti-affinity and
        other-key spread, a key the node's pool does not set taking each offering's value: None = any."""
        if pod.more is not None and pod.more.host_ports and not MoreChecks.ports_ok(pod, nn.pods):
            return set()
        if not needs_context(pod) and not self._sym_possible(state):
            return None
        ctx, domains = self._ctx(pod, state), self._rule_domains(pod)
        labels = self.more.new_node_labels(nn, state)
        open_keys = self._domain_keys(pod, ctx) - labels.keys()
        if not open_keys:
            return None if self.more.domains_ok(pod, ctx, labels, domains) else set()
        out: set[tuple[str, str, str]] = set()
        for opt in nn.options:
            fixed = {**labels, **{k: v for k, v in type_labels(opt.itype).items() if k in open_keys}}
            for o in opt.offerings:
                trial = dict(fixed)
                if L.ZONE_LABEL in open_keys:
                    trial[L.ZONE_LABEL] = o.zone
                if L.CAPACITY_TYPE_LABEL in open_keys:
                    trial[L.CAPACITY_TYPE_LABEL] = o.capacity_type
                if self.more.domains_ok(pod, ctx, trial, domains):
                    out.add((opt.itype.name, o.zone, o.capacity_type))
        return out

    def _pin_domains(self, pod: PodInfo, nn: NewNode, options: list[TypeOption], state: SimState) -> list[TypeOption]:
        """Narrow a new node to one value of each topology key the pod's constraints read that its pool leaves open
        (the emptiest domain of a spread rule, else the first by name): Karpenter gives a NodeClaim one domain per
        topology (topology.go), so the next pod counts it there."""
        ctx = self._ctx(pod, state)
        labels = self.more.new_node_labels(nn, state)
        counts = {r.key: ctx.spread_counts[i] for i, r in enumerate(pod.more.spread_rules)} if pod.more else {}
        for key in sorted(self._domain_keys(pod, ctx) - labels.keys()):
            values = {v for opt in options for v in option_label_values(opt, key)}
            if len(values) > 1:
                pick = min(values, key=lambda v, k=key: (counts.get(k, {}).get(v, 0), v))
                options = _keep_value(options, key, pick)
        return options

    def _bind_domains(self, pod: PodInfo, nn: NewNode, options: list[TypeOption], state: SimState) -> None:
        """Record on the new node the single value its options leave for each (non-zone) key the pod's constraints
        read, so later pods see the node in that domain."""
        if not needs_context(pod) and not self._sym_possible(state):
            return
        keys = self._domain_keys(pod, self._ctx(pod, state)) - nn.labels.keys() - {L.ZONE_LABEL, L.HOSTNAME_LABEL}
        for key in keys:
            values = {v for opt in options for v in option_label_values(opt, key)}
            if len(values) == 1:
                nn.labels = {**nn.labels, key: values.pop()}  # a copy: the pool's labels are shared


def _keep_value(options: list[TypeOption], key: str, value: str) -> list[TypeOption]:
    """`options` narrowed to offerings and types where label `key` is `value`."""
    out: list[TypeOption] = []
    for opt in options:
        if key in OFFERING_KEYS:
            offs = tuple(o for o in opt.offerings if (o.zone if key == L.ZONE_LABEL else o.capacity_type) == value)
            if offs:
                out.append(opt if len(offs) == len(opt.offerings) else
                           TypeOption(opt.itype, offs, opt.cpu, opt.mem, opt.pods, opt.eph))
        elif type_labels(opt.itype).get(key) == value:
            out.append(opt)
    return out
