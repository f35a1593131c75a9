"""bench.karpenter_suite is Karpenter's performance suite (test/suites/performance in kubernetes-sigs/karpenter) only
while its set-up is the suite's: the NodePool of suite_test.go and the workloads and phases of each scenario.

The size bound is checked on what the planner would launch (its new-node options for the pool) in every catalog
the project has: the bundled one (api/data/catalog.yaml) and the ones the worker discovers from EC2, built here as
discovery builds them from the data the EC2 stand-in serves. The bound once was `NotIn m5.8xlarge`, the bundled
catalog's only type of 32 vCPU; the discovered us-east-1 catalog holds 736 such types, and the suite's basic
consolidation ended on ten of them.
"""

from __future__ import annotations

import argparse
from functools import cache
from typing import Any

import pytest

from api import labels as L
from api.catalog import InstanceTypeCatalog, load_default_catalog
from api.snapshot import Snapshot
from bench.instance_discovery import offline_catalog
from bench.karpenter_scenarios import SCENARIOS
from bench.karpenter_suite import phase_timeout
from bench.karpenter_world import POOL, node_pool
from devstack.demo_aws import node_class_object
from planning.cluster import Cluster
from planning.scheduling.simulation import Scheduler

SIZE_BOUND = 32  # vCPU: Karpenter's suite admits instance sizes below this
CATALOGS = ("bundled", "discovered us-east-1", "discovered eu-west-1")


@cache
def catalog(name: str) -> InstanceTypeCatalog:
    return load_default_catalog() if name == "bundled" else offline_catalog(name.split()[-1])


def new_node_types(pool: dict[str, Any], cat: InstanceTypeCatalog) -> dict[str, float]:
    """Instance type -> vCPU of every type the planner may launch for `pool` (its new-node options)."""
    cluster = Cluster.from_snapshot(Snapshot.from_objects([node_class_object("default"), pool]), cat)
    options = Scheduler(cluster).pool_options(cluster.pools[pool["metadata"]["name"]])
    return {o.itype.name: o.itype.cpu_cores for o in options}


@pytest.mark.parametrize("name", CATALOGS)
def test_the_suite_pool_admits_no_type_of_32_vcpu_or_more(name: str) -> None:
    cat = catalog(name)
    admitted = new_node_types(node_pool(), cat)
    too_large = sorted(t for t, cpu in admitted.items() if cpu >= SIZE_BOUND)
    assert not too_large, f"{len(too_large)} types of {SIZE_BOUND}+ vCPU admitted in {name}: {too_large[:10]}"
    # and it is a size bound, nothing more: every on-demand amd64 type below it stays (the pool's other requirements)
    below = {it.name for it in cat.instance_types if it.cpu_cores < SIZE_BOUND and it.arch == "amd64"
             and any(o.available and o.capacity_type == "on-demand" for o in it.offerings)}
    assert set(admitted) == below
    assert max(admitted.values()) >= 16  # the suite's large pods (3.5 cpu, 28Gi) need room for several a node


def test_the_check_catches_a_pool_bounded_by_name() -> None:
    """The pool as it was (`NotIn m5.8xlarge`) holds the bound in the bundled catalog only: the check above tells."""
    old = node_pool()
    reqs = old["spec"]["template"]["spec"]["requirements"]
    reqs[:] = [r for r in reqs if r["key"] != "karpenter.k8s.aws/instance-cpu"]
    reqs.append({"key": L.INSTANCE_TYPE_LABEL, "operator": "NotIn", "values": ["m5.8xlarge"]})
    assert max(new_node_types(old, catalog("bundled")).values()) < SIZE_BOUND
    assert max(new_node_types(old, catalog("discovered us-east-1")).values()) >= SIZE_BOUND


def test_the_pool_is_the_suites() -> None:
    """suite_test.go's BeforeEach: the size bound (`Lt 32`), no limits, WhenEmptyOrUnderutilized after 30s, budget
    100%; on-demand amd64 as the KWOK pool's defaults."""
    pool = node_pool()
    assert pool["metadata"]["name"] == POOL
    spec = pool["spec"]
    assert "limits" not in spec
    assert spec["disruption"] == {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s",
                                  "budgets": [{"nodes": "100%"}]}
    reqs = spec["template"]["spec"]["requirements"]
    assert {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": [str(SIZE_BOUND)]} in reqs
    assert {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]} in reqs
    assert {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]} in reqs
    assert not any(r["key"] == L.INSTANCE_TYPE_LABEL for r in reqs)  # no type named in or out


# scenario -> (workload, replicas, cpu, memory, hostname spread, do-not-disrupt) and phase -> (kind, healthy pods,
# total-time limit in minutes, reserved CPU and memory utilization floors, replicas scaled to): basic_test.go,
# drift_performance_test.go, do_no_disrupt_test.go and host_name_spreading_xl_test.go of the suite (wide:
# wide_deployments_test.go, below)
SUITE = {
    "basic": ([("small-resource-app", 500, "900m", "3100Mi", False, False),
               ("large-resource-app", 500, "3500m", "28Gi", False, False)],
              [("scaleOut", 1000, 2, 0.53, 0.65, {}),
               ("consolidation", 700, 20, None, None, {"small-resource-app": 350, "large-resource-app": 350})]),
    "drift": ([("hostname-spread-app", 300, "900m", "3100Mi", True, False),
               ("standard-app", 300, "3500m", "28Gi", False, False)],
              [("scaleOut", 600, 5, None, None, {}), ("drift", 600, 50, None, None, {})]),
    "do-not-disrupt": ([("small-resource-app", 500, "900m", "3100Mi", True, False),
                        ("large-resource-app", 500, "3500m", "28Gi", False, False),
                        ("do-not-disrupt-app", 100, "900m", "450Mi", False, True)],
                       [("scaleOut", 1100, 4, 0.38, 0.40, {}),
                        ("consolidation", 600, 35, 0.38, 0.40,
                         {"small-resource-app": 250, "large-resource-app": 250})]),
    "hostname-spreading-xl": ([("small-resource-app", 1000, "900m", "3100Mi", True, False),
                               ("large-resource-app", 1000, "3500m", "28Gi", False, False)],
                              [("scaleOut", 2000, 35, 0.38, 0.40, {}),
                               ("consolidation", 1400, 35, 0.38, 0.40,
                                {"small-resource-app": 700, "large-resource-app": 700})]),
}


@pytest.mark.parametrize("name", sorted(SUITE))
def test_each_scenario_is_the_suites(name: str) -> None:
    workloads, phases = SUITE[name]
    s = SCENARIOS[name]
    assert [(w.name, w.replicas, w.cpu, w.memory, w.hostname_spread, w.do_not_disrupt) for w in s.workloads] \
        == workloads
    assert not any(w.zone_spread or w.anti_affinity for w in s.workloads)
    assert [(p.kind, p.pods, p.limits.totalMinutes, p.limits.cpuUtil, p.limits.memoryUtil, p.scale_to)
            for p in s.phases] == phases


def test_the_wide_scenario_is_the_suites() -> None:
    """30 deployments of 35 pods (the first 20) and 30 (the last 10), all zone-spread, 1-3 with hostname
    anti-affinity and 4-6 hostname-spread, scaled to 25 / 20: 1,000 pods, then 700."""
    s = SCENARIOS["wide"]
    assert len(s.workloads) == 30
    assert [(w.name, w.cpu, w.memory) for w in (s.workloads[0], s.workloads[10], s.workloads[17], s.workloads[29])] \
        == [("wide-deployment-1", "240m", "300Mi"), ("wide-deployment-11", "2300m", "64Gi"),
            ("wide-deployment-18", "3800m", "300Mi"), ("wide-deployment-30", "2800m", "24Gi")]
    assert [w.replicas for w in s.workloads] == [35] * 20 + [30] * 10
    assert all(w.zone_spread for w in s.workloads)
    assert [i for i, w in enumerate(s.workloads) if w.anti_affinity] == [0, 1, 2]
    assert [i for i, w in enumerate(s.workloads) if w.hostname_spread] == [3, 4, 5]
    assert [(p.kind, p.pods, p.limits.totalMinutes, p.limits.cpuUtil, p.limits.memoryUtil) for p in s.phases] \
        == [("scaleOut", 1000, 5, 0.20, 0.20), ("consolidation", 700, 40, 0.20, 0.20)]
    assert list(s.phases[1].scale_to.values()) == [25] * 20 + [20] * 10
    assert all(sum(w.replicas for w in s.workloads) == s.phases[0].pods for s in SCENARIOS.values())


def test_every_scenario_is_checked() -> None:
    assert set(SCENARIOS) == set(SUITE) | {"wide"}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_phase_runs_until_karpenters_time_limit_has_passed(name: str) -> None:
    """A phase the bench stops has failed Karpenter's limit: the default timeout is never below the threshold (wide's
    consolidation is allowed 40 min; a 30-min bench limit once stopped it while it was still inside)."""
    args = argparse.Namespace(phase_timeout=None, time_scale=0.1)
    for phase in SCENARIOS[name].phases:
        assert phase_timeout(phase, args) > phase.limits.totalMinutes * 60
    assert phase_timeout(SCENARIOS[name].phases[0], argparse.Namespace(phase_timeout=90.0, time_scale=1.0)) == 90.0
