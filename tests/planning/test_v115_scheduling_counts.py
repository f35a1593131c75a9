"""What a planner pass made of v1.15's scheduling inputs, for nodeflow's gauges (docs/semantics.md §3.5, §19):
pods given the cluster-default topology spread, pods counted at an in-place resize, pods a volume attachment limit
kept off an existing node. `PlanResult.scheduling_counts`, never in the plan's JSON."""

from __future__ import annotations

import copy

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot
from test_v115_default_spread import web
from test_v115_resize import resized
from test_v115_volume_limits import GP3, REQ, _a_beside_b, _csinode

from planning.cluster import parse_pod
from planning.planner.plan import plan
from planning.planner.scheduling_report import scheduling_report
from planning.scheduling import default_spread as ds


def test_a_quiet_cluster_counts_nothing() -> None:
    result = plan(snapshot(nodepool(), node_and_claim("a"), pod("w-1", "a")), AT)
    assert result.scheduling_counts == {"defaultSpreadPods": 0, "podsResizing": 0, "volumeLimitedPods": 0}
    assert "schedulingCounts" not in result.to_public() and "scheduling_counts" not in result.to_public()


def test_default_spread_counts_the_pods_it_gave_constraints_and_none_counts_none() -> None:
    own = web("own-1", "a")  # a pod with constraints of its own keeps only its own
    own["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                 "whenUnsatisfiable": "ScheduleAnyway",
                                                 "labelSelector": {"matchLabels": {"app": "web"}}}]
    snap = snapshot(nodepool(), node_and_claim("a"), web("web-1", "a"), web("web-2", "a"), own)
    with ds.default_spread(ds.SYSTEM):
        assert plan(snap, AT).scheduling_counts["defaultSpreadPods"] == 2
        # the same count `nodeflow plan` shows as scheduling.defaultTopologySpread.podsDefaulted
        assert scheduling_report(snap, ds.SYSTEM)["defaultTopologySpread"]["podsDefaulted"] == 2
    assert plan(snap, AT).scheduling_counts["defaultSpreadPods"] == 0


def test_a_pod_whose_status_differs_from_its_spec_is_counted_resizing() -> None:
    base = pod("w-1", "a", cpu="1")
    bigger = resized(base, "1", "1", "2")  # the kubelet allocated 2 cpu: counted at 2
    same = resized(pod("w-2", "a", cpu="1"), "1", "1", "1")  # status reports what the spec asks: not a resize
    assert parse_pod(bigger).resized and not parse_pod(same).resized and not parse_pod(copy.deepcopy(base)).resized
    reworded = resized(pod("w-3", "a", cpu="1"), "1", "1000m", "1000m")  # the same quantity, written otherwise
    assert not parse_pod(reworded).resized
    result = plan(snapshot(nodepool(), node_and_claim("a"), bigger, same), AT)
    assert result.scheduling_counts["podsResizing"] == 1


def test_a_pod_the_volume_limit_keeps_off_a_node_is_counted_once() -> None:
    full = plan(snapshot(nodepool(requirements=REQ), GP3, *_a_beside_b(1, _csinode("a", 1))), AT)
    assert full.scheduling_counts["volumeLimitedPods"] == 2  # x-1 kept off b, y-1 kept off a
    roomy = plan(snapshot(nodepool(requirements=REQ), GP3, *_a_beside_b(2, _csinode("a", 2))), AT)
    assert roomy.scheduling_counts["volumeLimitedPods"] == 0
