"""The scenarios of Karpenter's performance suite (test/suites/performance in kubernetes-sigs/karpenter), as data:
their workloads (replicas, requests, spreading, do-not-disrupt), their phases and Karpenter's thresholds.

Every scenario runs against one NodePool like the suite's: WhenEmptyOrUnderutilized, consolidateAfter 30s,
budget 100%, no limits, instance sizes below 32 vCPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from bench.karpenter_verdict import Thresholds

PhaseKind = Literal["scaleOut", "consolidation", "drift"]


@dataclass(frozen=True)
class Workload:
    name: str
    replicas: int
    cpu: str
    memory: str
    hostname_spread: bool = False
    zone_spread: bool = False
    anti_affinity: bool = False
    do_not_disrupt: bool = False


@dataclass(frozen=True)
class Phase:
    name: str
    kind: PhaseKind
    pods: int  # healthy pods expected when the phase ends
    limits: Thresholds
    scale_to: dict[str, int] = field(default_factory=dict)  # workload -> replicas (consolidation)


@dataclass(frozen=True)
class Scenario:
    name: str
    workloads: tuple[Workload, ...]
    phases: tuple[Phase, ...]

    @property
    def pods(self) -> int:
        return sum(w.replicas for w in self.workloads)


def _basic() -> Scenario:
    return Scenario("basic", (Workload("small-resource-app", 500, "900m", "3100Mi"),
                              Workload("large-resource-app", 500, "3500m", "28Gi")), (
        Phase("scaleOut", "scaleOut", 1000, Thresholds(2, 260, 0.50, 0.53, 0.65)),
        Phase("consolidation", "consolidation", 700, Thresholds(20, 260, 0.25),
              {"small-resource-app": 350, "large-resource-app": 350})))


def _drift() -> Scenario:
    return Scenario("drift", (Workload("hostname-spread-app", 300, "900m", "3100Mi", hostname_spread=True),
                              Workload("standard-app", 300, "3500m", "28Gi")), (
        Phase("initial", "scaleOut", 600, Thresholds(5, 425, 0.70)),
        Phase("drift", "drift", 600, Thresholds(50, 470, 1.05))))


def _do_not_disrupt() -> Scenario:
    return Scenario("do-not-disrupt", (
        Workload("small-resource-app", 500, "900m", "3100Mi", hostname_spread=True),
        Workload("large-resource-app", 500, "3500m", "28Gi"),
        Workload("do-not-disrupt-app", 100, "900m", "450Mi", do_not_disrupt=True)), (
        Phase("scaleOut", "scaleOut", 1100, Thresholds(4, 645, 1.10, 0.38, 0.40)),
        Phase("consolidation", "consolidation", 600, Thresholds(35, 585, 0.80, 0.38, 0.40),
              {"small-resource-app": 250, "large-resource-app": 250})))


WIDE_CPU = ("240m", "450m", "650m", "900m", "1400m", "1900m", "2400m", "2800m", "3300m", "3700m",
            "2300m", "900m", "1300m", "2800m", "1800m", "1850m", "3300m", "3800m", "225m", "450m",
            "700m", "900m", "1300m", "1800m", "2400m", "2800m", "3400m", "3800m", "3300m", "2800m")
WIDE_MEMORY = ("300Mi", "400Mi", "700Mi", "1Gi", "2Gi", "4Gi", "8Gi", "4Gi", "16Gi", "10Gi",
               "64Gi", "30Gi", "32Gi", "32Gi", "30Gi", "20Gi", "30Gi", "300Mi", "500Mi", "750Mi",
               "1Gi", "2Gi", "4Gi", "8Gi", "16Gi", "32Gi", "28Gi", "64Gi", "13Gi", "24Gi")


def _wide() -> Scenario:
    """30 deployments, 35 pods each for the first 20 and 30 for the last 10 (1,000), scaled to 25 / 20 (700);
    all spread over zones, 1-3 with hostname anti-affinity, 4-6 spread over hostnames."""
    workloads = tuple(Workload(f"wide-deployment-{i + 1}", 35 if i < 20 else 30, WIDE_CPU[i], WIDE_MEMORY[i],
                               zone_spread=True, anti_affinity=i < 3, hostname_spread=3 <= i < 6)
                      for i in range(30))
    scale_to = {w.name: 25 if i < 20 else 20 for i, w in enumerate(workloads)}
    return Scenario("wide", workloads, (
        Phase("scaleOut", "scaleOut", 1000, Thresholds(5, 370, 0.70, 0.20, 0.20)),
        Phase("consolidation", "consolidation", 700, Thresholds(40, 340, 0.30, 0.20, 0.20), scale_to)))


def _hostname_xl() -> Scenario:
    return Scenario("hostname-spreading-xl", (
        Workload("small-resource-app", 1000, "900m", "3100Mi", hostname_spread=True),
        Workload("large-resource-app", 1000, "3500m", "28Gi")), (
        Phase("scaleOut", "scaleOut", 2000, Thresholds(35, 1330, 1.40, 0.38, 0.40)),
        Phase("consolidation", "consolidation", 1400, Thresholds(35, 1200, 1.70, 0.38, 0.40),
              {"small-resource-app": 700, "large-resource-app": 700})))


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (_drift(), _basic(), _do_not_disrupt(), _wide(),
                                                       _hostname_xl())}
