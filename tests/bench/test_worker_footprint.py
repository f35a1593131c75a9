"""bench/worker_footprint.py's scaled scenario: every replica count and expected pod count scaled, at least 1."""

from __future__ import annotations

from bench.karpenter_scenarios import SCENARIOS
from bench.worker_footprint import scaled


def test_basic_at_a_fifth_keeps_its_shape() -> None:
    basic = SCENARIOS["basic"]
    small = scaled(basic, 0.2)
    assert [w.replicas for w in small.workloads] == [100, 100] and small.pods == 200
    assert [(p.kind, p.pods) for p in small.phases] == [("scaleOut", 200), ("consolidation", 140)]
    assert small.phases[1].scale_to == {"small-resource-app": 70, "large-resource-app": 70}
    assert [w.cpu for w in small.workloads] == [w.cpu for w in basic.workloads]  # requests unchanged
    assert small.phases[0].limits == basic.phases[0].limits
    assert all(w.replicas >= 1 for w in scaled(basic, 0.0001).workloads)
