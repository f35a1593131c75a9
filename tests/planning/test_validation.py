"""planning/disruption/validation.py: which re-planned commands still support a disruption and which do not."""

from __future__ import annotations

import pytest

from planning.disruption.commands import Command, Replacement
from planning.disruption.validation import Decision, Mismatch, same_decision


def _decision(nodes: list[str], *reps: tuple[str, list[str]], method: str = "SingleNodeConsolidation") -> Decision:
    return Decision.of(method, nodes, [Replacement(instance_types=t, capacity_type=c, price=0.1) for c, t in reps])


OURS = _decision(["a"], ("on-demand", ["m5.large"]))


@pytest.mark.parametrize("new", [
    _decision(["a"], ("on-demand", ["m5.large"])),
    _decision(["a"], ("on-demand", ["c5.large", "m5.large"])),  # one shared type is enough
])
def test_same_decision_matches(new: Decision) -> None:
    assert same_decision(OURS, new) is None


@pytest.mark.parametrize(("new", "why"), [
    (_decision(["b"], ("on-demand", ["m5.large"])), Mismatch.CANDIDATES_CHANGED),
    (_decision(["a", "b"], ("on-demand", ["m5.large"])), Mismatch.CANDIDATES_CHANGED),  # consolidation: exact set
    (_decision(["a"]), Mismatch.NEW_SCHEDULING_RESULTS),
    (_decision(["a"], ("on-demand", ["m5.large"]), ("on-demand", ["m5.large"])), Mismatch.NEW_SCHEDULING_RESULTS),
    (_decision(["a"], ("spot", ["m5.large"])), Mismatch.NEW_SCHEDULING_RESULTS),
    (_decision(["a"], ("on-demand", ["c5.large"])), Mismatch.NEW_SCHEDULING_RESULTS),
])
def test_same_decision_differs(new: Decision, why: Mismatch) -> None:
    assert same_decision(OURS, new) is why


@pytest.mark.parametrize("method", ["Emptiness", "Drift"])
def test_emptiness_and_drift_may_grow(method: str) -> None:
    ours = _decision(["a"], method=method)
    assert same_decision(ours, _decision(["a", "b"], method=method)) is None
    assert same_decision(ours, _decision(["b"], method=method)) is Mismatch.CANDIDATES_CHANGED


def test_messages_stay_as_users_see_them() -> None:
    assert Mismatch.CANDIDATES_CHANGED.value == "candidates changed"
    assert Mismatch.NEW_SCHEDULING_RESULTS.value == "scheduling simulation produced new results"


def test_decision_of_a_planning_command() -> None:
    cmd = Command(method="Drift", reason="Drifted", node_pool="p", nodes=["a", "b"],
                  replacements=[Replacement(instance_types=["m5.large"], capacity_type="spot", price=0.1)])
    d = Decision.of(cmd.method, cmd.nodes, cmd.replacements)
    assert d.nodes == {"a", "b"} and d.replacements[0].capacity_type == "spot"
