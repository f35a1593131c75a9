"""planning/disruption/validation.py `recheck_consolidation`: a consolidation command re-simulated on its own
candidates.

Node x (m5.2xlarge, 8 cpu) has 3 cpu free; a and b (m5.xlarge) each run one 1-cpu pod. Deleting a onto x is a
valid single-node command, and deleting a and b together a valid multi-node one, whichever a fresh pass would pick
(Karpenter's ConsolidationValidator); it stops being valid when its candidate changes, the room goes or the budget
runs out.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from api import labels as L
from planning.disruption.commands import Replacement
from planning.disruption.validation import Decision, Mismatch
from planning.planner.plan import run_pass
from planning.planner.recheck import recheck_consolidation
from tests.planning.planning_factory import AT, node_and_claim, nodepool, pod, snapshot

TYPES = {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}
ON_DEMAND = {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}
SINGLE, MULTI = "SingleNodeConsolidation", "MultiNodeConsolidation"


def _objects(x_used: str = "5", a_event: Any = None, **pool: Any) -> list[Any]:
    return [nodepool(requirements=[ON_DEMAND, TYPES], **pool),
            node_and_claim("x", "m5.2xlarge"), pod("big-1", "x", cpu=x_used, memory="1Gi"),
            node_and_claim("a", "m5.xlarge", last_pod_event=a_event), pod("wa-1", "a", cpu="1", memory="1Gi"),
            node_and_claim("b", "m5.xlarge"), pod("wb-1", "b", cpu="1", memory="1Gi")]


def _recheck(objs: list[Any], nodes: list[str], *reps: tuple[str, list[str]], method: str = SINGLE,
             exclude: frozenset[str] = frozenset()) -> Mismatch | None:
    ours = Decision.of(method, nodes, [Replacement(instance_types=t, capacity_type=c, price=0.1) for c, t in reps])
    return recheck_consolidation(snapshot(*objs), AT, nodes, ours, exclude=exclude).mismatch


def test_a_command_the_fresh_pass_would_not_pick_still_holds() -> None:
    fresh = run_pass(snapshot(*_objects()), AT).commands
    # v1.14's sort puts x (dearest per unit of disruption) first, so the multi-node search fails and a goes alone
    assert [(c.method, sorted(c.nodes)) for c in fresh] == [(SINGLE, ["a"])]
    assert _recheck(_objects(), ["a"]) is None
    assert _recheck(_objects(), ["a", "b"], method=MULTI) is None


def test_room_taken_meanwhile_is_new_scheduling_results() -> None:
    objs = _objects(x_used="7500m")
    assert _recheck(objs, ["a"]) is None  # b still has room
    objs[-1] = pod("wb-1", "b", cpu="3500m", memory="1Gi")
    assert _recheck(objs, ["a"]) is Mismatch.NEW_SCHEDULING_RESULTS


def test_room_reserved_for_an_in_flight_node_is_new_scheduling_results() -> None:
    objs = _objects(x_used="6")  # 2 cpu free: b's pod (in flight) takes one, a's would take the other
    assert _recheck(objs, ["a"]) is None
    objs[-1] = pod("wb-1", "b", cpu="1500m", memory="1Gi")
    assert _recheck(objs, ["a"], exclude=frozenset({"b"})) is Mismatch.NEW_SCHEDULING_RESULTS


def test_a_candidate_no_longer_consolidatable_or_gone_is_candidates_changed() -> None:
    recent = _objects(a_event=AT - timedelta(seconds=5), consolidate_after="30s")
    assert _recheck(recent, ["a"]) is Mismatch.CANDIDATES_CHANGED
    gone = [o for o in _objects() if not (isinstance(o, list) and o[0]["metadata"]["name"] == "a")]
    assert _recheck(gone, ["a"]) is Mismatch.CANDIDATES_CHANGED
    assert _recheck(_objects(), ["a"], exclude=frozenset({"a"})) is Mismatch.CANDIDATES_CHANGED


def test_a_budget_that_allows_fewer_nodes_is_budget() -> None:
    one = _objects(budgets=[{"nodes": "1"}])
    assert _recheck(one, ["a"]) is None
    assert _recheck(one, ["a", "b"], method=MULTI) is Mismatch.BUDGET


def test_a_calendar_hold_is_held() -> None:
    calendar = {"exclusions": [{"from": "2026-11-20", "to": "2026-11-25"}]}
    held = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "freeze"},
            "spec": {"nodePools": ["default"], "calendar": calendar}}
    assert _recheck([*_objects(), held], ["a"]) is Mismatch.HELD


def test_a_replacement_must_still_be_the_one_launched() -> None:
    full = [nodepool(requirements=[ON_DEMAND, TYPES]),
            node_and_claim("x", "m5.2xlarge"), pod("big-1", "x", cpu="7500m", memory="1Gi"),
            node_and_claim("a", "m5.2xlarge"), pod("wa-1", "a", cpu="3", memory="1Gi")]
    assert _recheck(full, ["a"], ("on-demand", ["m5.xlarge"])) is None
    assert _recheck(full, ["a"]) is Mismatch.NEW_SCHEDULING_RESULTS  # planned as a delete: now needs a node
    assert _recheck(full, ["a"], ("spot", ["m5.xlarge"])) is Mismatch.NEW_SCHEDULING_RESULTS


def test_a_candidate_nominated_while_the_command_waits_is_candidates_changed() -> None:
    """Karpenter's validation (disruption/validation.go, IsNodeNominated): the provisioner planned pending pods
    onto `a` during the validation wait, so the command that would take it is dropped."""
    from planning.disruption.nomination import window
    from tests.planning.planning_factory import ts

    assert _recheck(_objects(), ["a"]) is None
    objs = _objects()
    objs[3] = node_and_claim("a", "m5.xlarge", claim_annotations={
        L.NOMINATED_UNTIL_ANNOTATION: ts(AT + window())})
    assert _recheck(objs, ["a"]) is Mismatch.CANDIDATES_CHANGED


def test_a_replacement_no_longer_needed_is_carried_out_as_the_delete() -> None:
    """Planned as a replace while x was full; x's pod has gone since, so a's pod fits on x: Karpenter discards the
    command (new scheduling results), nodeflow deletes a without launching (docs/semantics.md §12)."""
    freed = [nodepool(requirements=[ON_DEMAND, TYPES]),
             node_and_claim("x", "m5.2xlarge"), pod("big-1", "x", cpu="4", memory="1Gi"),
             node_and_claim("a", "m5.2xlarge"), pod("wa-1", "a", cpu="3", memory="1Gi")]
    ours = Decision.of(SINGLE, ["a"], [Replacement(instance_types=["m5.xlarge"], capacity_type="on-demand", price=0.1)])
    checked = recheck_consolidation(snapshot(*freed), AT, ["a"], ours)
    assert checked.mismatch is Mismatch.REPLACEMENT_NOT_NEEDED
    assert checked.fresh is not None and checked.fresh.nodes == ["a"] and checked.fresh.replacements == []
    assert [(m.pod, m.to) for m in checked.fresh.pods] == [("default/wa-1", "x")]
    assert _recheck(freed, ["a"]) is None  # planned as the delete, it simply holds


def test_a_replacement_no_longer_needed_is_not_a_failure() -> None:
    from planning.disruption.validation import Verdict

    assert Verdict.of(Mismatch.REPLACEMENT_NOT_NEEDED).valid
    assert Verdict.VALID.valid
    assert not any(v.valid for v in Verdict if v not in (Verdict.VALID, Verdict.REPLACEMENT_NOT_NEEDED))


def test_new_scheduling_results_say_what_the_fresh_simulation_found() -> None:
    """The verdict stays typed; the message a user reads adds why (Karpenter's text first)."""
    full = [nodepool(requirements=[ON_DEMAND, TYPES]),
            node_and_claim("x", "m5.2xlarge"), pod("big-1", "x", cpu="7500m", memory="1Gi"),
            node_and_claim("a", "m5.2xlarge"), pod("wa-1", "a", cpu="3", memory="1Gi")]
    delete = recheck_consolidation(snapshot(*full), AT, ["a"], Decision.of(SINGLE, ["a"], []))
    assert delete.mismatch is Mismatch.NEW_SCHEDULING_RESULTS
    needs = "scheduling simulation produced new results: it now needs a replacement (on-demand m5.xlarge)"
    assert delete.message == needs
    spot = Decision.of(SINGLE, ["a"], [Replacement(instance_types=["m5.xlarge"], capacity_type="spot", price=0.1)])
    checked = recheck_consolidation(snapshot(*full), AT, ["a"], spot)
    assert checked.mismatch is Mismatch.NEW_SCHEDULING_RESULTS
    assert checked.message == needs
    gone = [full[0], *full[1:3], node_and_claim("a", "m5.2xlarge"), pod("wa-1", "a", cpu="7", memory="1Gi")]
    refused = recheck_consolidation(snapshot(*gone), AT, ["a"], spot)
    assert refused.mismatch is Mismatch.NEW_SCHEDULING_RESULTS and refused.fresh is None
    assert refused.message.startswith("scheduling simulation produced new results: ") and len(refused.message) > 45
