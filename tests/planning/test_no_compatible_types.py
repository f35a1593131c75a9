"""planning/provisioning/provisioner.py no_compatible_types: the NodePools Karpenter's scheduler.go names in a
NoCompatibleInstanceTypes Event (requirements that filter out every available instance type)."""

from __future__ import annotations

from planning_factory import nodepool, pod, snapshot

from api import labels as L
from planning.provisioning.provisioner import decide

IMPOSSIBLE = [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["no-such.type"]}]


def test_a_pool_whose_requirements_match_no_type_is_named_and_others_are_not() -> None:
    decision = decide(snapshot(nodepool("default"), nodepool("ghost", requirements=IMPOSSIBLE),
                               pod("web-0", None, cpu="1")))
    assert decision.no_compatible_types == ["ghost"]
    assert len(decision.launches) == 1 and decision.launches[0].node_pool == "default"


def test_nothing_pending_names_nothing() -> None:
    decision = decide(snapshot(nodepool("ghost", requirements=IMPOSSIBLE)))
    assert decision.no_compatible_types == []
