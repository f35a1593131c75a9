"""DisruptionPolicy controls, round two: drain, spot, provisioning, cost limits and per-pool node repair.

Each is what Karpenter's operators keep asking for and Karpenter does not offer; the issue each answers is
named on its model. Semantics: docs/semantics.md §15. Field names are fixed by docs/contracts.md §3.1.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from enum import StrEnum

from pydantic import Field

from api.policy_fields import (
    Money,
    Percent,
    PolicyDuration,
    PolicyModel,
    percent_fraction,
    to_timedelta,
)

DO_NOT_CONSOLIDATE_ANNOTATION = "nodeflow.dev/do-not-consolidate"  # on a pod: blocks consolidation of its node only
DISRUPTION_COST_ANNOTATION = "nodeflow.dev/disruption-cost"  # on a pod: relative weight, default 1
WAIT_FOR_COMPLETION_ANNOTATION = "nodeflow.dev/wait-for-completion"  # on a pod: left to finish like a Job's
# on a NodeClaim: when it was launched on-demand because spot had no capacity (RFC 3339;
# planning/policies/spot_return.py)
SPOT_FALLBACK_ANNOTATION = "nodeflow.dev/spot-fallback"


class JobsDrain(StrEnum):
    """What a voluntary disruption's drain does with pods that run to completion."""

    EVICT = "Evict"  # as Karpenter: evicted with the rest (the default)
    WAIT = "Wait"  # left to finish, up to maxWait or the terminationGracePeriod deadline


class DrainPolicy(PolicyModel):
    """Let Jobs finish (kubernetes-sigs/karpenter issues 701, 1209, 651)."""

    jobs: JobsDrain = JobsDrain.EVICT
    max_wait: PolicyDuration | None = None

    @property
    def wait(self) -> timedelta | None:
        return to_timedelta(self.max_wait)


class SpotPolicy(PolicyModel):
    """Spot fallback and return (aws/karpenter-provider-aws issues 714, 6425, 8298)."""

    return_after: PolicyDuration | None = None
    max_on_demand_fraction: Percent | None = None

    @property
    def return_delay(self) -> timedelta | None:
        return to_timedelta(self.return_after)

    @property
    def on_demand_cap(self) -> Decimal | None:
        return percent_fraction(self.max_on_demand_fraction)


class ProvisioningPolicy(PolicyModel):
    """Zone balance without spread constraints (aws/karpenter-provider-aws 7311); deprecated pools
    (kubernetes-sigs/karpenter 2667)."""

    zone_balance: int | None = Field(default=None, ge=1)  # max node-count difference between zones
    deprecated: bool = False


class LimitsPolicy(PolicyModel):
    """Cost limits (kubernetes-sigs/karpenter 1215): US dollars per hour for the pools the policy selects."""

    cost_per_hour: Money | None = None

    @property
    def cost_limit(self) -> Decimal | None:
        return None if self.cost_per_hour is None else Decimal(self.cost_per_hour)


ZONE_OUTAGE_PERCENT_RANGE = (1, 100)  # repair.zoneOutagePercent: a share of a zone's nodes, as the worker's flag


class RepairControls(PolicyModel):
    """Node repair per NodePool (kubernetes-sigs/karpenter#2811 per-pool repair settings, #3031 the zone breaker):
    switch it off, tolerate unhealthy nodes longer or shorter, or hold repairs at another zone-outage share than the
    worker's `--node-repair-zone-outage-percent`. Unset fields keep the worker's settings (docs/semantics.md §13)."""

    enabled: bool = True
    toleration: PolicyDuration | None = None  # replaces the toleration of every repair condition for the pool's nodes
    zone_outage_percent: int | None = Field(default=None, ge=ZONE_OUTAGE_PERCENT_RANGE[0],
                                            le=ZONE_OUTAGE_PERCENT_RANGE[1])

    @property
    def toleration_delta(self) -> timedelta | None:
        return to_timedelta(self.toleration)
