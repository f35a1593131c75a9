"""Optimizing consolidation: one CP-SAT model picks which candidates to remove and which replacements to launch.

Karpenter's multi-node consolidation only tries prefixes of its sorted candidate list and at most one
replacement, so it stops short of the cheapest cluster. This method, opted into with the NodePool
annotation `nodeflow.dev/consolidation-mode: optimize` or `plan(..., optimize=True)`, searches every subset
of the allowed candidates at once and up to `max_replacements` new nodes, maximizing savings per hour.

It never loosens a safety rule: only candidates the normal candidate filter admits (do-not-disrupt and
PDB-blocked nodes are not candidates), at most the pool's `Underutilized` budget per NodePool (optionally
no PDB asked for more evictions than it allows at once), moved pods placed by nodeSelector / affinity /
taints on nodes with room for them, pool limits kept, and a command only when it saves money. Nodes whose
pods carry anti-affinity or topology spread are left to the ordinary methods, whose simulation models them.

OR-Tools is imported only when the method runs; without it a clear error names the `solver` extra.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from api import labels as L
from api.quantity import parse_cpu, parse_memory
from planning.cluster import NodeInfo, PodInfo, PoolInfo
from planning.disruption.candidates import GRACEFUL, Candidate, sort_for_consolidation
from planning.disruption.commands import Command, Replacement, Requirement
from planning.disruption.consolidation import Consolidation
from planning.disruption.method import PassContext, make_command
from planning.disruption.method_names import MethodName
from planning.scheduling.pod_context import anti_of
from planning.scheduling.simulation import SimResult
from planning.scheduling.type_options import TypeOption, unit_price
from planning.selectors import match_label_selector, match_node_selector_terms, tolerates_all

CONSOLIDATION_MODE_ANNOTATION = L.CONSOLIDATION_MODE_ANNOTATION
OPTIMIZE_MODE = "optimize"
PRICE_SCALE = 1_000_000  # micro-dollars per hour inside the model


class SolverMissingError(RuntimeError):
    """OR-Tools is not installed."""


def import_cp_model():
    """The CP-SAT module, or an error telling how to install it."""
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:
        raise SolverMissingError(
            "consolidation mode 'optimize' needs OR-Tools; install the solver extra: pip install 'nodeflow[solver]'"
        ) from exc
    return cp_model


def pool_opted_in(pool: PoolInfo) -> bool:
    """The NodePool asks for optimizing consolidation through its annotation."""
    return pool.annotations.get(CONSOLIDATION_MODE_ANNOTATION, "").strip().lower() == OPTIMIZE_MODE


@dataclass
class OptimizerSettings:
    """Bounds that keep one solve quick: wall time, replacements per command, candidates considered."""

    time_limit: float = 3.0  # with the retry, at most 9 s: a pass still fits the planner's 10 s period
    relative_gap: float = 0.01  # stop once the move is proven within 1% of the best possible one
    max_replacements: int = 8
    max_candidates: int = 24  # the most wasteful candidates (price per use) enter the model
    max_new_types: int = 6  # node types a replacement may be (the most cost-efficient for the pods moved)
    # Karpenter only refuses nodes whose PDBs allow no eviction now, and drains wait for the rest; with
    # pdb_headroom a move also never needs more evictions of one PDB than it allows at this moment.
    pdb_headroom: bool = False
    retry_factor: float = 2.0  # a solve that found no saving move and proved nothing gets this much more time
    workers: int = 2
    # A work budget in CP-SAT's deterministic time units instead of wall time (with one worker): reproducible
    # results, for tests and comparisons; time_limit still caps the wall time.
    deterministic_time: float | None = None


_defaults = OptimizerSettings()


@contextmanager
def optimizer_settings(settings: OptimizerSettings) -> Iterator[None]:
    """Use `settings` for optimizing passes inside the block (benchmarks trade solve time for figures)."""
    global _defaults
    saved, _defaults = _defaults, settings
    try:
        yield
    finally:
        _defaults = saved


def optimizer_method(ctx: PassContext, optimize: bool = False,
                     settings: OptimizerSettings | None = None) -> OptimizingConsolidation | None:
    """The method for this pass: every pool with `optimize`, else the annotated pools, else None (off)."""
    settings = settings or _defaults
    if optimize:
        return OptimizingConsolidation(ctx, settings)
    pools = {p.name for p in ctx.cluster.pools.values() if pool_opted_in(p)}
    return OptimizingConsolidation(ctx, settings, pools) if pools else None


@dataclass
class _Group:
    """Candidates' pods with equal requests and placement constraints, and how many sit on each candidate.

    Grouping across candidates keeps the model small: where a group's pods go does not depend on which
    removed node they came from.
    """

    pods: list[PodInfo]
    cpu: int
    mem: int
    eph: int
    per_cand: dict[int, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.pods)


@dataclass
class _NewType:
    """A node the move may launch: pool, instance type, one offering; capacity after DaemonSet overhead."""

    pool: PoolInfo
    option: TypeOption
    zone: str
    capacity_type: str
    price: float
    cpu: int
    mem: int
    pods: int
    groups: set[int] = field(default_factory=set)


_Free = tuple[int, int, int, int | None]  # a destination's free milli-cpu, memory, pod slots, ephemeral storage


@dataclass
class _Model:
    """One CP-SAT model of a move: what it was built from and the variables the answer is read from."""

    model: Any
    cands: list[Candidate]
    groups: list[_Group]
    dest_ok: dict[int, list[NodeInfo]]  # per group: the existing nodes one of its pods fits on
    new_types: list[_NewType]
    remove: list[Any] = field(default_factory=list)  # per candidate: removed or not
    flows: dict[tuple[int, str], Any] = field(default_factory=dict)  # (group, node): pods moved there
    bins: list[tuple[int, Any, dict[int, Any]]] = field(default_factory=list)  # (type, used, pods per group)
    savings: Any = None
    cand_index: dict[str, int] = field(init=False)  # candidate name -> its index in `cands`

    def __post_init__(self) -> None:
        self.cand_index = {c.name: i for i, c in enumerate(self.cands)}


def _group_pods(cands: list[Candidate]) -> list[_Group]:
    """The candidates' pods grouped by requests and placement signature, largest first."""
    by_key: dict[tuple, _Group] = {}
    for i, c in enumerate(cands):
        for p in c.reschedulable:
            key = (_milli(p.cpu), p.mem, p.eph, p.sig)
            g = by_key.get(key)
            if g is None:
                g = by_key[key] = _Group([], key[0], key[1], key[2])
            g.pods.append(p)
            g.per_cand[i] = g.per_cand.get(i, 0) + 1
    return sorted(by_key.values(), key=lambda g: (-g.cpu, -g.mem, g.pods[0].key))


def _waste(c: Candidate) -> float:
    """Price per unit of use (the busiest resource): the dearest, emptiest nodes are the best to rework."""
    n = c.node
    used = max(n.used_cpu / n.cpu if n.cpu else 0.0, n.used_mem / n.mem if n.mem else 0.0,
               n.used_pods / n.max_pods if n.max_pods else 0.0)
    return c.price / max(used, 0.01)


def _milli(cores: float) -> int:
    return math.ceil(cores * 1000 - 1e-6)


class OptimizingConsolidation:
    """A consolidation method (reason Underutilized) that solves for the best multi-node move with CP-SAT."""

    name = MethodName.MULTI_NODE_CONSOLIDATION
    reason = L.REASON_UNDERUTILIZED
    disruption_class = GRACEFUL

    def __init__(self, ctx: PassContext, settings: OptimizerSettings | None = None,
                 pools: Iterable[str] | None = None) -> None:
        self.ctx = ctx
        self.settings = settings or OptimizerSettings()
        self.pools = None if pools is None else set(pools)  # None: every pool
        self.last_stats: dict[str, float] = {}
        self._filter = Consolidation(ctx)

    # ---- candidate filter (the multi-node one, docs/semantics.md §5.3) ---------------------------------

    def should_disrupt(self, c: Candidate) -> bool:
        """Only opted-in pools; otherwise exactly the multi-node filter (and its Unconsolidatable events)."""
        if self.pools is not None and c.pool.name not in self.pools:
            return False
        return self._filter.should_disrupt(c)

    @staticmethod
    def _movable(c: Candidate) -> bool:
        """Pods the model places exactly: no hostname anti-affinity, no topology spread, nothing the scheduling
        simulation checks beyond those (pod affinity, other keys, host ports, preferences, blocked volumes:
        planning/scheduling/pod_constraints.py)."""
        return all(not p.anti_affinity and not p.spread and p.more is None and not p.volume_blocked
                   for p in c.reschedulable)

    # ---- the move --------------------------------------------------------------------------------

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        """At most one command: the removal set and replacements with the largest savings, if any saves."""
        cands = self._eligible(budgets, candidates)
        if not cands:
            return []
        cp_model = import_cp_model()
        started = time.monotonic()
        groups = _group_pods(cands)
        free, dest_ok = self._destinations(groups)
        m = _Model(cp_model.CpModel(), cands, groups, dest_ok, self._new_types(groups))
        self._add_removals(m, budgets)
        self._add_existing_flows(m, free)
        self._add_new_nodes(m, budgets)
        self._add_every_pod_lands(m)
        self._pool_limits(m.model, cands, m.remove, m.new_types, m.bins)
        self._add_objective(m)
        built = time.monotonic() - started
        solver, status = self._solve(cp_model, m, built)
        self.last_stats = {"seconds": round(time.monotonic() - started, 3), "candidates": len(cands),
                           "groups": len(groups), "newTypes": len(m.new_types),
                           "optimal": float(status == cp_model.OPTIMAL), "status": solver.StatusName(status),
                           "buildSeconds": round(built, 3)}
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return []
        chosen = [c for i, c in enumerate(cands) if solver.Value(m.remove[i])]
        saved = solver.Value(m.savings) / PRICE_SCALE
        if not chosen or saved <= 0:
            return []
        attempt = self._filter.worth_it(chosen, self._command(solver, m, chosen, saved))
        if attempt.skipped is not None:
            self.ctx.policies.skip(attempt.skipped)
        return [attempt.command] if attempt.command is not None else []

    # ---- building and solving the model ----------------------------------------------------------

    def _eligible(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Candidate]:
        """Priced, movable candidates of pools with budget left; the most wasteful `max_candidates` of them."""
        cands = [c for c in sort_for_consolidation(candidates)
                 if budgets.get(c.pool.name, 0) > 0 and c.price > 0 and self._movable(c)]
        return sorted(cands, key=_waste, reverse=True)[: self.settings.max_candidates]

    def _destinations(self, groups: list[_Group]) -> tuple[dict[str, _Free], dict[int, list[NodeInfo]]]:
        """Free room of every destination node, and per group the nodes one of its pods fits on alone."""
        dests = self.ctx.scheduler.dest
        free: dict[str, _Free] = {}
        for n in dests:  # less the room reserved for in-flight nodes' pods (docs/semantics.md §2)
            rcpu, rmem, rpods, reph = self.ctx.scheduler.reserved_usage(n)
            free[n.name] = (_milli(n.cpu) - _milli(n.used_cpu + rcpu), n.mem - n.used_mem - rmem,
                            n.max_pods - n.used_pods - rpods, (n.eph - n.used_eph - reph) if n.eph else None)
        dest_ok: dict[int, list[NodeInfo]] = {}
        for gi, g in enumerate(groups):
            pod = g.pods[0]
            ok = []
            for n in dests:
                fcpu, fmem, fpods, feph = free[n.name]
                if g.cpu > fcpu or g.mem > fmem or fpods < 1 or (feph is not None and g.eph > feph):
                    continue
                if self._static_ok(pod, n):
                    ok.append(n)
            dest_ok[gi] = ok
        return free, dest_ok

    def _add_removals(self, m: _Model, budgets: dict[str, int]) -> None:
        """One remove flag per candidate, at most each pool's budget of them (and PDB headroom if asked)."""
        model = m.model
        m.remove = [model.NewBoolVar(f"r_{i}") for i in range(len(m.cands))]
        for pool, allowed in budgets.items():
            members = [m.remove[i] for i, c in enumerate(m.cands) if c.pool.name == pool]
            if members:
                model.Add(sum(members) <= max(0, allowed))
        if self.settings.pdb_headroom:
            self._pdb_headroom(model, m.cands, m.remove)

    def _add_existing_flows(self, m: _Model, free: dict[str, _Free]) -> None:
        """Pods of each group onto existing nodes, within their free room; a removed candidate takes none."""
        model, groups = m.model, m.groups
        into: dict[str, list[tuple[int, Any]]] = {}
        for gi, g in enumerate(groups):
            for n in m.dest_ok[gi]:
                v = model.NewIntVar(0, g.count, f"y_{gi}_{n.index}")
                m.flows[gi, n.name] = v
                into.setdefault(n.name, []).append((gi, v))
        for name, items in into.items():
            fcpu, fmem, fpods, feph = free[name]
            ci = m.cand_index.get(name)
            keep = 1 if ci is None else (1 - m.remove[ci])
            model.Add(sum(v * groups[gi].cpu for gi, v in items) <= fcpu * keep)
            model.Add(sum(v * groups[gi].mem for gi, v in items) <= fmem * keep)
            model.Add(sum(v for _, v in items) <= fpods * keep)
            if feph is not None and any(groups[gi].eph for gi, _ in items):
                model.Add(sum(v * groups[gi].eph for gi, v in items) <= feph * keep)

    def _add_new_nodes(self, m: _Model, budgets: dict[str, int]) -> None:
        """Up to `_copies` nodes of each new type, used in order (no symmetric twins), `max_replacements` in all."""
        model, groups, cands = m.model, m.groups, m.cands
        removable = sum(min(max(budgets.get(pool, 0), 0), sum(1 for c in cands if c.pool.name == pool))
                        for pool in {c.pool.name for c in cands})
        for ti, nt in enumerate(m.new_types):
            prev = None
            for k in range(self._copies(nt, groups, removable)):
                use = model.NewBoolVar(f"u_{ti}_{k}")
                counts = {gi: model.NewIntVar(0, groups[gi].count, f"z_{gi}_{ti}_{k}") for gi in nt.groups}
                model.Add(sum(v * groups[gi].cpu for gi, v in counts.items()) <= nt.cpu * use)
                model.Add(sum(v * groups[gi].mem for gi, v in counts.items()) <= nt.mem * use)
                model.Add(sum(counts.values()) <= nt.pods * use)
                if prev is not None:
                    model.AddImplication(use, prev)
                prev = use
                m.bins.append((ti, use, counts))
        if m.bins:
            model.Add(sum(u for _, u, _ in m.bins) <= self.settings.max_replacements)

    @staticmethod
    def _add_every_pod_lands(m: _Model) -> None:
        """Every pod of a removed candidate lands on an existing node or a new one; the others stay."""
        for gi, g in enumerate(m.groups):
            terms = [m.flows[gi, n.name] for n in m.dest_ok[gi]] + [c[gi] for _, _, c in m.bins if gi in c]
            m.model.Add(sum(terms) == sum(n * m.remove[i] for i, n in g.per_cand.items()))

    @staticmethod
    def _add_objective(m: _Model) -> None:
        """Most savings per hour (never negative), then fewest evictions; hinted at "change nothing"."""
        model = m.model
        price_c = [round(c.price * PRICE_SCALE) for c in m.cands]
        price_n = [round(nt.price * PRICE_SCALE) for nt in m.new_types]
        m.savings = (sum(price_c[i] * r for i, r in enumerate(m.remove))
                     - sum(price_n[ti] * u for ti, u, _ in m.bins))
        moved = sum(n * m.remove[i] for g in m.groups for i, n in g.per_cand.items())
        model.Add(m.savings >= 0)
        weight = sum(g.count for g in m.groups) + 1
        model.Maximize(m.savings * weight - moved)
        for v in m.remove:  # "change nothing" is always feasible: start there
            model.AddHint(v, 0)
        for _, u, _ in m.bins:
            model.AddHint(u, 0)

    def _solve(self, cp_model: Any, m: _Model, built: float) -> tuple[Any, Any]:
        """Solve within what building left of `time_limit`; one longer look when nothing was found or proven."""
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = max(0.1, self.settings.time_limit - built)
        solver.parameters.num_workers = max(1, self.settings.workers)
        solver.parameters.relative_gap_limit = self.settings.relative_gap
        solver.parameters.cp_model_probing_level = 0  # probing big assignment models costs seconds, buys little
        if self.settings.deterministic_time is not None:  # same answer however busy the machine is
            solver.parameters.max_deterministic_time = self.settings.deterministic_time
            solver.parameters.num_workers = 1
        status = solver.Solve(m.model)
        if status != cp_model.OPTIMAL and not (status == cp_model.FEASIBLE and solver.Value(m.savings) > 0):
            # nothing found but nothing proven either: one longer look before the pass says "stable"
            solver.parameters.max_time_in_seconds = self.settings.time_limit * self.settings.retry_factor
            status = solver.Solve(m.model)
        return solver, status

    # ---- pieces ----------------------------------------------------------------------------------

    def _pdb_headroom(self, model, cands: list[Candidate], remove) -> None:
        """Never plan more simultaneous evictions of a PDB's pods than it allows right now."""
        pdb_load: dict[str, tuple[int, dict[int, int]]] = {}
        for i, c in enumerate(cands):
            for p in c.reschedulable:
                for pdb in self.ctx.cluster.pdbs_for(p):
                    _, per = pdb_load.setdefault(pdb.key, (pdb.disruptions_allowed, {}))
                    per[i] = per.get(i, 0) + 1
        for allowed, per in pdb_load.values():
            model.Add(sum(n * remove[i] for i, n in per.items()) <= max(0, allowed))

    def _copies(self, nt: _NewType, groups: list[_Group], removable: int) -> int:
        """How many nodes of one type a move can need: pods of at most `removable` candidates fill them.

        Two nodes of one type that could be merged never both appear in a best move, so with S the summed
        largest share of a node each moved pod takes, 2*ceil(S)-1 nodes suffice.
        """
        share: dict[int, float] = {}
        for gi in nt.groups:
            g = groups[gi]
            one = max(g.cpu / nt.cpu, g.mem / nt.mem, 1 / nt.pods)
            for i, n in g.per_cand.items():
                share[i] = share.get(i, 0.0) + n * one
        top = sum(sorted(share.values(), reverse=True)[:removable])
        return max(0, min(self.settings.max_replacements, 2 * math.ceil(top - 1e-9) - 1))

    def _static_ok(self, pod: PodInfo, node: NodeInfo) -> bool:
        """nodeSelector, required node affinity, taints, and anti-affinity of the pods already there."""
        if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
            return False
        if not match_node_selector_terms(pod.affinity_terms, node.labels):
            return False
        if not tolerates_all(pod.tolerations, node.taints):
            return False
        if self.ctx.cluster.has_anti_affinity:
            for other in node.pods:
                for sel, namespaces in other.anti_affinity:
                    if other.active and pod.namespace in namespaces and match_label_selector(sel, pod.labels):
                        return False
        # others' anti-affinity on zone or another key (planning/scheduling/pod_context.py keeps who holds one)
        for labels, other in self.ctx.scheduler.more.holders:
            for t in anti_of(other):
                if t.key in node.labels and labels.get(t.key) == node.labels[t.key] and t.matches(pod.namespace,
                                                                                                  pod.labels):
                    return False
        return True

    def _new_types(self, groups: list[_Group]) -> list[_NewType]:
        """Offerings of every pool each group may use; dominated ones (dearer, smaller, fewer groups) dropped."""
        scheduler = self.ctx.scheduler
        cluster = self.ctx.cluster
        out: list[_NewType] = []
        for pool in scheduler.pools_by_weight:
            dcpu, dmem, dpods = cluster.daemon_overhead(pool.name)
            tolerating = [gi for gi, g in enumerate(groups) if tolerates_all(g.pods[0].tolerations, pool.taints)]
            if not tolerating:
                continue
            allowed = {gi: scheduler._pod_allowed(groups[gi].pods[0], pool) for gi in tolerating}
            for opt in scheduler._options(pool):
                cpu, mem, pods = _milli(opt.cpu) - _milli(dcpu), opt.mem - dmem, opt.pods - dpods
                if cpu <= 0 or mem <= 0 or pods <= 0:
                    continue
                for off in opt.offerings:
                    key = (opt.itype.name, off.zone, off.capacity_type)
                    fits = {gi for gi in tolerating
                            if (allowed[gi] is None or key in allowed[gi])
                            and groups[gi].cpu <= cpu and groups[gi].mem <= mem
                            and (not groups[gi].eph or groups[gi].eph <= opt.eph_room)}
                    if fits:
                        out.append(_NewType(pool, opt, off.zone, off.capacity_type, off.price, cpu, mem, pods, fits))
        kept = []
        for i, a in enumerate(out):
            dominated = False
            for j, b in enumerate(out):
                if i == j or b.pool.name != a.pool.name:
                    continue
                if (b.price <= a.price and b.cpu >= a.cpu and b.mem >= a.mem and b.pods >= a.pods
                        and b.groups >= a.groups):
                    same = (b.price == a.price and b.cpu == a.cpu and b.mem == a.mem and b.pods == a.pods
                            and b.groups == a.groups)
                    if not same or j < i:
                        dominated = True
                        break
            if not dominated:
                kept.append(a)
        return self._most_efficient(kept, groups)

    def _most_efficient(self, types: list[_NewType], groups: list[_Group]) -> list[_NewType]:
        """The `max_new_types` cheapest per unit of the pods' cpu/memory mix, plus each group's cheapest home."""
        limit = self.settings.max_new_types
        if len(types) <= limit:
            return types
        cpu = sum(g.cpu * g.count for g in groups) or 1
        mem = sum(g.mem * g.count for g in groups) or 1
        ranked = sorted(types, key=lambda t: unit_price(t.price, t.cpu, t.mem, cpu, mem))
        chosen = {id(t) for t in ranked[:limit]}
        for gi in range(len(groups)):
            homes = [t for t in types if gi in t.groups]
            if homes and not any(id(t) in chosen for t in homes):
                chosen.add(id(min(homes, key=lambda t: t.price)))
        return [t for t in ranked if id(t) in chosen]

    def _pool_limits(self, model, cands: list[Candidate], remove, new_types: list[_NewType], bins) -> None:
        """New nodes may not take a pool past its `limits`, counting the capacity the move removes."""
        cluster = self.ctx.cluster
        for pool in cluster.pools.values():
            if not pool.limits:
                continue
            members = [n for n in cluster.nodes if n.pool == pool.name and not n.marked_for_deletion]

            def total(n: NodeInfo, dim: str) -> int:
                if dim == "cpu":
                    return _milli(n.itype.cpu_cores if n.itype else n.cpu)
                if dim == "memory":
                    return (n.itype.memory_bytes if n.itype else n.mem) // 1024
                return 1

            for dim in ("cpu", "memory", "nodes"):
                if dim not in pool.limits:
                    continue
                raw = pool.limits[dim]
                limit = (_milli(parse_cpu(raw)) if dim == "cpu" else parse_memory(raw) // 1024 if dim == "memory"
                         else int(raw))
                used = sum(total(n, dim) for n in members)
                added = []
                for ti, use, _ in bins:
                    nt = new_types[ti]
                    if nt.pool.name != pool.name:
                        continue
                    size = (_milli(nt.option.itype.cpu_cores) if dim == "cpu"
                            else nt.option.itype.memory_bytes // 1024 if dim == "memory" else 1)
                    added.append(size * use)
                if not added:
                    continue
                freed = [total(c.node, dim) * remove[i] for i, c in enumerate(cands) if c.pool.name == pool.name]
                model.Add(used + sum(added) - sum(freed) <= max(limit, used))

    def _command(self, solver: Any, m: _Model, chosen: list[Candidate], saved: float) -> Command:
        """Turn the solution into a Command: removed nodes, replacements (new-<i>), and where each pod goes."""
        replacements: list[Replacement] = []
        bin_names: dict[int, str] = {}
        for b, (ti, use, _) in enumerate(m.bins):
            if solver.Value(use):
                nt = m.new_types[ti]
                bin_names[b] = f"new-{len(replacements)}"
                replacements.append(Replacement(
                    instance_types=[nt.option.itype.name], capacity_type=nt.capacity_type, price=round(nt.price, 6),
                    zone=nt.zone, node_pool=nt.pool.name,
                    requirements=[
                        Requirement(key=L.INSTANCE_TYPE_LABEL, operator="In", values=[nt.option.itype.name]),
                        Requirement(key=L.CAPACITY_TYPE_LABEL, operator="In", values=[nt.capacity_type]),
                        Requirement(key=L.ZONE_LABEL, operator="In", values=[nt.zone]),
                    ],
                ))
        chosen_names = {c.name for c in chosen}
        placements: list[tuple[PodInfo, str]] = []
        for gi, g in enumerate(m.groups):
            pods = iter([p for p in g.pods if p.node_name in chosen_names])
            for n in m.dest_ok[gi]:
                for _ in range(solver.Value(m.flows[gi, n.name])):
                    placements.append((next(pods), n.name))
            for b, (_, _, counts) in enumerate(m.bins):
                if gi in counts:
                    for _ in range(solver.Value(counts[gi])):
                        placements.append((next(pods), bin_names[b]))
        ordered = sorted(chosen, key=lambda c: m.cand_index[c.name])
        return make_command(self, ordered, SimResult(placements=placements), replacements, saved)  # type: ignore[arg-type]
