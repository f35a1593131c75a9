"""The exact minimum cost per hour of nodes that can hold a snapshot's pods, from OR-Tools CP-SAT.

This is the yardstick for consolidation quality: the planner's final cost divided by this optimum is the
ratio the bench reports. The solver runs with a time limit, so the result carries both the best solution
found and the proven lower bound (equal when the status is OPTIMAL).

Two CP-SAT solves share the time limit. (1) The aggregate relaxation: integer node counts per type, pods
split freely across the copies of a type; every real packing is one of its solutions, so its optimum (or
CP-SAT's best bound, never below a solver-free per-resource bound) is a proven lower bound. (2) The exact
packing: each node type t gets U_t interchangeable copies (a node is used or not) and integer counts say
how many pods of each class go into each copy, over the types the relaxation used plus those of the
starting layout (the better of a cost-efficiency greedy and the rounded relaxation, also the hint).
U_t is at most 2*ceil(S_t)-1, S_t summing each pod's largest share of a type-t node: two copies of one
type that could be merged never both appear in an optimum. Copies are used in order and sorted by cpu
load (symmetry breaking).
"""

from __future__ import annotations

import math
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bench.packing_problem import PackingProblem, problem_from_objects

PRICE_SCALE = 1_000_000  # prices in micro-dollars per hour inside the model


class OptimumNode(BaseModel):
    """Nodes of one type in the optimal (best found) solution."""

    model_config = ConfigDict(populate_by_name=True)

    node_pool: str = Field(alias="nodePool")
    instance_type: str = Field(alias="instanceType")
    zone: str
    capacity_type: str = Field(alias="capacityType")
    price: float
    count: int


class OptimumResult(BaseModel):
    """Best solution and proven lower bound of the minimum node cost per hour."""

    model_config = ConfigDict(populate_by_name=True)

    status: Literal["OPTIMAL", "FEASIBLE", "UNKNOWN", "INFEASIBLE"]
    cost_per_hour: float | None = Field(alias="costPerHour")
    lower_bound: float = Field(alias="lowerBound")
    greedy_cost_per_hour: float = Field(alias="greedyCostPerHour")
    nodes: list[OptimumNode] = Field(default_factory=list)
    node_count: int = Field(0, alias="nodeCount")
    pods: int = 0
    pod_classes: int = Field(0, alias="podClasses")
    node_types: int = Field(0, alias="nodeTypes")
    unplaceable_pods: list[str] = Field(default_factory=list, alias="unplaceablePods")
    seconds: float = 0.0

    @property
    def gap(self) -> float:
        """Relative distance between the best solution and the bound (0 when proven optimal)."""
        if not self.cost_per_hour:
            return 0.0
        return (self.cost_per_hour - self.lower_bound) / self.cost_per_hour


def _import_cp_model():
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("the exact optimum needs OR-Tools: pip install 'nodeflow[solver]'") from exc
    return cp_model


def _shares(problem: PackingProblem, ci: int, t: int) -> float:
    c, b = problem.classes[ci], problem.bin_types[t]
    return max(c.cpu_milli / b.cpu_milli, c.memory_kib / b.memory_kib, 1 / b.pods)


def _fit_count(problem: PackingProblem, ci: int, t: int) -> int:
    c, b = problem.classes[ci], problem.bin_types[t]
    n = b.pods
    if c.cpu_milli:
        n = min(n, b.cpu_milli // c.cpu_milli)
    if c.memory_kib:
        n = min(n, b.memory_kib // c.memory_kib)
    return n


Packing = list[tuple[int, dict[int, int]]]  # (node type, pods per class) for each node


def _fill(problem: PackingProblem, t: int, left: dict[int, int], order: list[int],
          free: list[int] | None = None) -> tuple[dict[int, int], list[int]]:
    """First-fit of the remaining pods (in `order`) into one node of type t with `free` room."""
    b = problem.bin_types[t]
    free = free if free is not None else [b.cpu_milli, b.memory_kib, b.pods]
    counts: dict[int, int] = {}
    for ci in order:
        c = problem.classes[ci]
        if not left.get(ci) or t not in c.compatible:
            continue
        n = min(left[ci], free[2], free[0] // c.cpu_milli if c.cpu_milli else left[ci],
                free[1] // c.memory_kib if c.memory_kib else left[ci])
        if n > 0:
            counts[ci] = counts.get(ci, 0) + n
            free[0] -= n * c.cpu_milli
            free[1] -= n * c.memory_kib
            free[2] -= n
    return counts, free


def greedy_packing(problem: PackingProblem, left: dict[int, int] | None = None) -> Packing:
    """Largest pods first; each new node is the type whose first-fit filling costs least per unit of work held.

    A unit of work is a pod's share of the total cpu plus its share of the total memory, so the choice
    follows the pods' real mix instead of the size of one pod. Gives the upper bound and the search's start.
    """
    classes = problem.classes
    left = dict(left) if left is not None else {ci: c.count for ci, c in enumerate(classes)}
    total_cpu = sum(classes[ci].cpu_milli * n for ci, n in left.items()) or 1
    total_mem = sum(classes[ci].memory_kib * n for ci, n in left.items()) or 1
    order = sorted(left, key=lambda ci: -max(_shares(problem, ci, t) for t in classes[ci].compatible))

    def work(counts: dict[int, int]) -> float:
        return sum(n * (classes[ci].cpu_milli / total_cpu + classes[ci].memory_kib / total_mem)
                   for ci, n in counts.items())

    packing: Packing = []
    while any(left.values()):
        first = next(ci for ci in order if left.get(ci))
        best: tuple[float, int, dict[int, int]] | None = None
        for t in classes[first].compatible:
            trial = dict(left)
            counts, _ = _fill(problem, t, trial, [first, *[ci for ci in order if ci != first]])
            value = problem.bin_types[t].price / max(work(counts), 1e-12)
            if counts.get(first) and (best is None or value < best[0]):
                best = (value, t, counts)
        assert best is not None
        _, t, counts = best
        for ci, n in counts.items():
            left[ci] -= n
        packing.append((t, counts))
    return packing


def relaxation_packing(problem: PackingProblem, flows: dict[tuple[int, int], int]) -> Packing:
    """Round the relaxation: first-fit each type's share of pods into nodes of that type, greedy for the rest."""
    left = {ci: c.count for ci, c in enumerate(problem.classes)}
    packing: Packing = []
    by_type: dict[int, dict[int, int]] = {}
    for (ci, t), n in flows.items():
        if n:
            by_type.setdefault(t, {})[ci] = n
    for t, share in by_type.items():
        order = sorted(share, key=lambda ci: -_shares(problem, ci, t))
        while any(share.values()):
            counts, _ = _fill(problem, t, share, order)
            if not counts:
                break
            for ci, n in counts.items():
                share[ci] -= n
                left[ci] -= n
            packing.append((t, counts))
    if any(left.values()):
        packing += greedy_packing(problem, {ci: n for ci, n in left.items() if n})
    return packing


def packing_cost(problem: PackingProblem, packing: Packing) -> float:
    return sum(problem.bin_types[t].price for t, _ in packing)


def dimension_bound(problem: PackingProblem) -> float:
    """A bound needing no solver: in one resource, each pod costs at least its share of the cheapest node for it."""
    best = 0.0
    for dim in range(3):
        total = 0.0
        for c in problem.classes:
            need = (c.cpu_milli, c.memory_kib, 1)[dim]
            total += c.count * min(problem.bin_types[t].price * need
                                   / (problem.bin_types[t].cpu_milli, problem.bin_types[t].memory_kib,
                                      problem.bin_types[t].pods)[dim] for t in c.compatible)
        best = max(best, total)
    return best


def aggregate_bound(problem: PackingProblem, time_limit: float, workers: int, cost_cap: float | None = None
                    ) -> tuple[tuple[float, dict[int, int], bool], dict[tuple[int, int], int]]:
    """Lower bound: integer node counts per type, but pods may be split across the copies of one type.

    Every real packing is a solution of this relaxation, so its optimum (or CP-SAT's best bound) is a proven
    lower bound; it is tight when pods are small against nodes, which is the usual case.
    Returns ((bound, node counts of the relaxation's best solution, proven optimal), pods per (class, type)).
    """
    cp_model = _import_cp_model()
    classes, types = problem.classes, problem.bin_types
    model = cp_model.CpModel()
    price = [round(b.price * PRICE_SCALE) for b in types]
    xs: dict[int, object] = {}
    flows: dict[tuple[int, int], object] = {}
    for t, b in enumerate(types):
        served = [ci for ci, c in enumerate(classes) if t in c.compatible]
        if not served:
            continue
        hosted = sum(classes[ci].count for ci in served)
        cap = hosted if cost_cap is None or price[t] == 0 else min(hosted, round(cost_cap * PRICE_SCALE) // price[t])
        xs[t] = model.NewIntVar(0, cap, f"x_{t}")
        for ci in served:
            flows[ci, t] = model.NewIntVar(0, classes[ci].count, f"f_{ci}_{t}")
        model.Add(sum(flows[ci, t] * classes[ci].cpu_milli for ci in served) <= b.cpu_milli * xs[t])
        model.Add(sum(flows[ci, t] * classes[ci].memory_kib for ci in served) <= b.memory_kib * xs[t])
        model.Add(sum(flows[ci, t] for ci in served) <= b.pods * xs[t])
        for ci in served:  # no node of type t holds more than fit_count pods of one class
            model.Add(flows[ci, t] <= _fit_count(problem, ci, t) * xs[t])
    for ci, c in enumerate(classes):
        model.Add(sum(v for (cj, _), v in flows.items() if cj == ci) == c.count)
    model.Minimize(sum(price[t] * x for t, x in xs.items()))
    solver, status = _solve(model, time_limit, workers)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return (solver.BestObjectiveBound() / PRICE_SCALE, {}, False), {}
    counts = {t: solver.Value(x) for t, x in xs.items() if solver.Value(x)}
    flow_values = {key: solver.Value(v) for key, v in flows.items() if solver.Value(v)}
    return (solver.BestObjectiveBound() / PRICE_SCALE, counts, status == cp_model.OPTIMAL), flow_values


def pack(problem: PackingProblem, copies_per_type: dict[int, int], time_limit: float, workers: int,
         hint: list[tuple[int, dict[int, int]]] | None = None) -> tuple[dict[int, int] | None, float]:
    """Exact packing restricted to at most `copies_per_type[t]` nodes of each type t.

    Returns (nodes used per type or None, CP-SAT's bound for this restricted model).
    """
    cp_model = _import_cp_model()
    classes, types = problem.classes, problem.bin_types
    price = [round(b.price * PRICE_SCALE) for b in types]
    model = cp_model.CpModel()
    copies: dict[int, list[tuple]] = {}
    for t, limit in copies_per_type.items():
        b = types[t]
        served = [ci for ci, c in enumerate(classes) if t in c.compatible]
        if not served or limit <= 0:
            continue
        share = sum(classes[ci].count * _shares(problem, ci, t) for ci in served)
        bound = min(limit, sum(classes[ci].count for ci in served), max(1, 2 * math.ceil(share - 1e-9) - 1))
        copies[t] = []
        for k in range(bound):
            use = model.NewBoolVar(f"use_{t}_{k}")
            counts = {ci: model.NewIntVar(0, min(classes[ci].count, _fit_count(problem, ci, t)), f"n_{ci}_{t}_{k}")
                      for ci in served}
            model.Add(sum(v * classes[ci].cpu_milli for ci, v in counts.items()) <= b.cpu_milli * use)
            model.Add(sum(v * classes[ci].memory_kib for ci, v in counts.items()) <= b.memory_kib * use)
            model.Add(sum(counts.values()) <= b.pods * use)
            copies[t].append((use, counts))
        for (u1, c1), (u2, c2) in zip(copies[t], copies[t][1:], strict=False):
            model.AddImplication(u2, u1)
            model.Add(sum(v * classes[ci].cpu_milli for ci, v in c1.items())
                      >= sum(v * classes[ci].cpu_milli for ci, v in c2.items()))
    for ci, c in enumerate(classes):
        model.Add(sum(counts[ci] for cps in copies.values() for _, counts in cps if ci in counts) == c.count)
    uses = [(t, u) for t, cps in copies.items() for u, _ in cps]
    model.Minimize(sum(price[t] * u for t, u in uses))
    if hint:
        _hint_greedy(model, hint, copies, classes)
    solver, status = _solve(model, time_limit, workers)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, solver.BestObjectiveBound() / PRICE_SCALE
    used: dict[int, int] = {}
    for t, u in uses:
        if solver.Value(u):
            used[t] = used.get(t, 0) + 1
    return used, solver.BestObjectiveBound() / PRICE_SCALE


def solve_problem(problem: PackingProblem, time_limit: float = 10.0, workers: int = 2) -> OptimumResult:
    """Minimum-cost packing of the problem's pods into node types, with CP-SAT under a time limit.

    Two solves: the aggregate relaxation (a proven lower bound, and which node types an optimum uses), then
    the exact packing over those types (plus the greedy layout's, so the greedy cost is always reachable).
    """
    started = time.monotonic()
    classes, types = problem.classes, problem.bin_types
    base = {"pods": problem.pod_count, "podClasses": len(classes), "nodeTypes": len(types),
            "unplaceablePods": problem.unplaceable}
    if not classes:
        return OptimumResult(status="OPTIMAL", costPerHour=0.0, lowerBound=0.0, greedyCostPerHour=0.0, **base)

    greedy = greedy_packing(problem)
    (bound, relaxed, _), flows = aggregate_bound(problem, time_limit * 0.5, workers,
                                                 cost_cap=packing_cost(problem, greedy))
    rounded = relaxation_packing(problem, flows) if flows else greedy
    start = min((greedy, rounded), key=lambda pk: packing_cost(problem, pk))
    start_cost = packing_cost(problem, start)
    copies: dict[int, int] = {t: n + 1 + n // 4 for t, n in relaxed.items()}
    for t, _ in start:
        copies[t] = copies.get(t, 0)
    for t in set(copies):
        copies[t] = max(copies[t], sum(1 for u, _ in start if u == t))
    remaining = time_limit - (time.monotonic() - started)
    used, _ = pack(problem, copies, max(0.2, remaining), workers, hint=start)
    if used is None or sum(types[t].price * n for t, n in used.items()) > start_cost:
        used = {}
        for t, _ in start:
            used[t] = used.get(t, 0) + 1
    greedy_cost = packing_cost(problem, greedy)
    cost = sum(types[t].price * n for t, n in used.items())
    bound = min(max(bound, dimension_bound(problem)), cost)
    nodes = [OptimumNode(nodePool=types[t].node_pool, instanceType=types[t].instance_type, zone=types[t].zone,
                         capacityType=types[t].capacity_type, price=types[t].price, count=n)
             for t, n in sorted(used.items(), key=lambda kv: (-kv[1], types[kv[0]].instance_type))]
    status = "OPTIMAL" if cost - bound <= 1e-6 else "FEASIBLE"
    return OptimumResult(status=status, costPerHour=round(cost, 6), lowerBound=round(bound, 6),
                         greedyCostPerHour=round(greedy_cost, 6), nodes=nodes, nodeCount=sum(used.values()),
                         seconds=round(time.monotonic() - started, 3), **base)


def _hint_greedy(model, greedy: list[tuple[int, dict[int, int]]], copies: dict[int, list[tuple]], classes) -> None:
    """Start the search from the greedy packing, its bins ordered like the symmetry-breaking constraints."""
    per_type: dict[int, list[dict[int, int]]] = {}
    for t, counts in greedy:
        per_type.setdefault(t, []).append(counts)
    for t, cps in copies.items():
        filled = sorted(per_type.get(t, []), key=lambda cnt: -sum(n * classes[ci].cpu_milli for ci, n in cnt.items()))
        if len(filled) > len(cps):
            return  # the cost bound cut the greedy layout; no consistent hint
        for k, (use, counts) in enumerate(cps):
            cnt = filled[k] if k < len(filled) else {}
            model.AddHint(use, 1 if cnt else 0)
            for ci, var in counts.items():
                model.AddHint(var, cnt.get(ci, 0))


def optimum_for_objects(objects: list[dict], catalog=None, time_limit: float = 10.0,
                        workers: int = 2) -> OptimumResult:
    """The optimum for a snapshot given as Kubernetes objects (NodePools, Pods, optional catalog)."""
    return solve_problem(problem_from_objects(objects, catalog), time_limit=time_limit, workers=workers)


def _solve(model: Any, time_limit: float, workers: int) -> tuple[Any, int]:
    """Run CP-SAT with the settings both formulations use; returns the solver (for values) and its status."""
    solver = _import_cp_model().CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, time_limit)
    solver.parameters.num_workers = max(1, workers)
    solver.parameters.cp_model_probing_level = 0  # probing these models costs seconds and buys little
    return solver, solver.Solve(model)
