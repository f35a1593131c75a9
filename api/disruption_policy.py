"""nodeflow.dev/v1alpha1 DisruptionPolicy: the disruption controls Karpenter lacks, kept off the NodePool.

A policy applies to NodePools by name (`spec.nodePools`) or by their labels (`spec.nodePoolSelector`), so the
NodePool schema stays exactly Karpenter's. At most one policy may apply to a pool: two that do are a conflict
(`policy_for` raises `PolicyConflictError` naming both), never a merge, because a merge of two rollout or
calendar rules has no obvious meaning. Semantics of each control: docs/semantics.md §15.

Durations are Go durations as in the NodePool (api/duration.py); the schedule of an allow window is a cron
line with the budgets' robfig semantics (api/cron.py). Money is a decimal string ("0.05" US dollars per hour),
never a float, so "0.1" is exactly a dime.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from api.cron import CronError, load_zone, parse_schedule
from api.duration import parse_duration
from api.meta import K8sModel, ObjectMeta
from api.nodepool import NodePool
from api.policy_controls import DrainPolicy, LimitsPolicy, ProvisioningPolicy, RepairControls, SpotPolicy
from api.policy_fields import (
    Money,
    Percent,
    PolicyDuration,
    PolicyModel,
    percent_fraction,
    to_timedelta,
)

GROUP = "nodeflow.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "DisruptionPolicy"
PLURAL = "disruptionpolicies"

# A drift wave: a node count >= 1, or a percentage 1%-100% of the pool's drifted nodes.
WAVE_PERCENT_PATTERN = r"^(100|[1-9][0-9]?)%$"
NODEPOOL_NAME_MAX_LENGTH = 63  # the CRD's maxLength of spec.nodePools[*]: a NodePool name is a label value
WAVE_MAX_LENGTH = 4  # "100%": the CRD's maxLength on a wave string, which bounds the cost of its CEL regex
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class AckMode(StrEnum):
    """Whether a pre-disruption hook's answer gates the disruption."""

    REQUIRED = "Required"  # wait for a 2xx answer or an approval, up to ackTimeout
    NONE = "None"  # call the hook, then go on whatever it answers


class OnTimeout(StrEnum):
    """What a required ack that never came does at ackTimeout."""

    ABANDON = "Abandon"
    PROCEED = "Proceed"


class LabelSelectorRequirement(PolicyModel):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None

    @model_validator(mode="after")
    def _values(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in (self.values or ())
        if self.operator == "NotIn":
            return not present or labels[self.key] not in (self.values or ())
        return present if self.operator == "Exists" else not present


class LabelSelector(PolicyModel):
    """A metav1.LabelSelector over NodePool metadata.labels; `{}` selects every pool."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        if any(labels.get(k) != v for k, v in (self.match_labels or {}).items()):
            return False
        return all(e.matches(labels) for e in self.match_expressions or ())


class ExpirationPolicy(PolicyModel):
    """Soft-then-hard expiry: from gracefulExpireAfter a node is replaced like drift (reason Expiring).

    `jitter` ("10%") spreads each node's expiry earlier by up to that share, fixed per node, so a fleet
    launched in one hour does not expire in one hour (aws/karpenter-provider-aws issue 1884).
    """

    graceful_expire_after: PolicyDuration | None = None
    jitter: Percent | None = None

    @property
    def graceful_after(self) -> timedelta | None:
        return to_timedelta(self.graceful_expire_after)

    @property
    def jitter_fraction(self) -> Decimal | None:
        return percent_fraction(self.jitter)


Wave = int | str  # a node count, or a percentage string ("10%")


class DriftPolicy(PolicyModel):
    """Drift rolled out in waves: cumulative targets of the pool's drifted nodes, a bake between waves."""

    waves: list[Any] | None = Field(default=None, min_length=1, max_length=20)
    bake_time: PolicyDuration | None = None
    max_failed_replacements: int | None = Field(default=None, ge=0)
    health_timeout: PolicyDuration | None = None

    @field_validator("waves")
    @classmethod
    def _waves(cls, waves: list[Any] | None) -> list[Wave] | None:
        for i, w in enumerate(waves or ()):
            if isinstance(w, bool) or not isinstance(w, (int, str)) or (isinstance(w, int) and w < 1):
                raise ValueError(f"waves[{i}]: {w!r} must be a node count >= 1 or a percentage like \"10%\"")
            if isinstance(w, str) and re.fullmatch(WAVE_PERCENT_PATTERN, w) is None:
                raise ValueError(f"waves[{i}]: {w!r} must be a percentage 1%-100% (pattern {WAVE_PERCENT_PATTERN})")
        return waves

    @property
    def bake(self) -> timedelta | None:
        return to_timedelta(self.bake_time)

    @property
    def health(self) -> timedelta | None:
        return to_timedelta(self.health_timeout)

    def wave_targets(self, drifted: int) -> list[int]:
        """Cumulative node counts after each wave for `drifted` nodes: percentages round up, counts are capped,
        targets never go down, and a final wave takes the rest when the last one written is below 100%."""
        if drifted <= 0:
            return []
        targets: list[int] = []
        for w in self.waves or ["100%"]:
            n = math.ceil(int(w[:-1]) * drifted / 100) if isinstance(w, str) else w
            n = min(max(n, targets[-1] if targets else 0), drifted)
            if not targets or n > targets[-1]:
                targets.append(n)
        if targets[-1] < drifted:
            targets.append(drifted)
        return targets


class PreDisruptionHook(PolicyModel):
    url: str = Field(min_length=1)
    ack: AckMode = AckMode.NONE
    ack_timeout: PolicyDuration | None = None
    on_timeout: OnTimeout = OnTimeout.ABANDON

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        return _check_url(v)

    @property
    def ack_wait(self) -> timedelta | None:
        return to_timedelta(self.ack_timeout)


class NotifyHook(PolicyModel):
    url: str = Field(min_length=1)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        return _check_url(v)


def _check_url(v: str) -> str:
    if re.match(r"^https?://[^/\s]+", v) is None:
        raise ValueError(f"{v!r} must be an http:// or https:// URL")
    return v


class Hooks(PolicyModel):
    pre_disruption: PreDisruptionHook | None = None
    notify: NotifyHook | None = None


class EscalationPolicy(PolicyModel):
    """For graceful disruptions blocked by PDBs or do-not-disrupt: notify after notifyAfter, force after forceAfter."""

    notify_after: PolicyDuration | None = None
    force_after: PolicyDuration | None = None

    @model_validator(mode="after")
    def _order(self) -> EscalationPolicy:
        if self.notify_after and self.force_after and parse_duration(self.force_after) <= parse_duration(
                self.notify_after):
            raise ValueError(f"forceAfter ({self.force_after}) must be longer than notifyAfter ({self.notify_after})")
        return self

    @property
    def notify(self) -> timedelta | None:
        return to_timedelta(self.notify_after)

    @property
    def force(self) -> timedelta | None:
        return to_timedelta(self.force_after)


class ConsolidationPolicy(PolicyModel):
    """Consolidate only when the savings justify the evictions (docs/semantics.md §15.3)."""

    min_savings_per_hour: Money | None = None
    min_savings_percent: float | None = Field(default=None, ge=0, le=100)
    per_pod_disruption_cost: Money | None = None

    @property
    def min_per_hour(self) -> Decimal | None:
        return None if self.min_savings_per_hour is None else Decimal(self.min_savings_per_hour)

    @property
    def pod_cost(self) -> Decimal:
        return Decimal(self.per_pod_disruption_cost or "0")


class DateRange(PolicyModel):
    """Whole days, both ends inclusive, in the calendar's time zone; `to` defaults to `from` (one day)."""

    from_: date = Field(alias="from")
    to: date | None = None

    @model_validator(mode="after")
    def _order(self) -> DateRange:
        if self.to is not None and self.to < self.from_:
            raise ValueError(f"'to' ({self.to}) is before 'from' ({self.from_})")
        return self

    @property
    def last(self) -> date:
        return self.to or self.from_


class AllowWindow(PolicyModel):
    """A window that opens at each hit of `schedule` (in the calendar's time zone) and lasts `duration`."""

    schedule: str
    duration: PolicyDuration

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, v: str) -> str:
        try:
            parse_schedule(v)
        except CronError as exc:
            raise ValueError(f"{v!r}: {exc}") from None
        return v

    @property
    def length(self) -> timedelta:
        return parse_duration(self.duration)


class CalendarPolicy(PolicyModel):
    time_zone: str | None = None
    exclusions: list[DateRange] | None = Field(default=None, max_length=100)
    allow_windows: list[AllowWindow] | None = Field(default=None, max_length=50)

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                load_zone(v)
            except CronError as exc:
                raise ValueError(str(exc)) from None
        return v


class DisruptionPolicySpec(PolicyModel):
    node_pools: list[Annotated[str, Field(max_length=NODEPOOL_NAME_MAX_LENGTH)]] | None = Field(default=None,
                                                                                             min_length=1)
    node_pool_selector: LabelSelector | None = None
    expiration: ExpirationPolicy | None = None
    drift: DriftPolicy | None = None
    hooks: Hooks | None = None
    escalation: EscalationPolicy | None = None
    consolidation: ConsolidationPolicy | None = None
    calendar: CalendarPolicy | None = None
    # round two (names fixed by docs/contracts.md §3.1)
    drain: DrainPolicy | None = None
    spot: SpotPolicy | None = None
    provisioning: ProvisioningPolicy | None = None
    limits: LimitsPolicy | None = None
    repair: RepairControls | None = None  # v1.15-era: node repair per pool (docs/semantics.md §13)

    @model_validator(mode="after")
    def _one_target(self) -> DisruptionPolicySpec:
        if (self.node_pools is None) == (self.node_pool_selector is None):
            raise ValueError("exactly one of 'nodePools' and 'nodePoolSelector' must be set")
        return self


class DisruptionPolicy(K8sModel):
    """A nodeflow.dev/v1alpha1 DisruptionPolicy (cluster-scoped)."""

    api_version: Literal["nodeflow.dev/v1alpha1"] = API_VERSION
    kind: Literal["DisruptionPolicy"] = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DisruptionPolicySpec
    status: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.metadata.name

    def applies_to(self, nodepool: NodePool) -> bool:
        """By name, or by the NodePool's own metadata.labels (not its template labels)."""
        if self.spec.node_pools is not None:
            return nodepool.name in self.spec.node_pools
        selector = self.spec.node_pool_selector
        return selector is not None and selector.matches(nodepool.metadata.labels)

    @property
    def graceful_expire_after(self) -> timedelta | None:
        return self.spec.expiration.graceful_after if self.spec.expiration else None


class PolicyConflictError(ValueError):
    """Two DisruptionPolicies apply to one NodePool."""

    def __init__(self, nodepool: str, first: str, second: str) -> None:
        self.nodepool, self.first, self.second = nodepool, *sorted((first, second))
        super().__init__(f"NodePool {nodepool!r} is selected by two DisruptionPolicies, {self.first!r} and "
                         f"{self.second!r}; at most one may apply")


def policy_for(nodepool: NodePool, policies: Iterable[DisruptionPolicy]) -> DisruptionPolicy | None:
    """The one policy that applies to `nodepool`, None when none does; PolicyConflictError when two do."""
    found: DisruptionPolicy | None = None
    for policy in policies:
        if policy.applies_to(nodepool):
            if found is not None:
                raise PolicyConflictError(nodepool.name, found.name, policy.name)
            found = policy
    return found


def policy_conflicts(nodepools: Sequence[NodePool], policies: Sequence[DisruptionPolicy]) -> list[PolicyConflictError]:
    """One error per NodePool that two or more policies select (for `nodeflow validate` and the planner)."""
    errors = []
    for pool in nodepools:
        try:
            policy_for(pool, policies)
        except PolicyConflictError as exc:
            errors.append(exc)
    return errors


def resolve_policies(nodepools: Sequence[NodePool], policies: Sequence[DisruptionPolicy],
                     ) -> tuple[dict[str, DisruptionPolicy], list[PolicyConflictError]]:
    """The policy of every pool that has exactly one, and the conflicts (a conflicted pool gets no policy)."""
    chosen: dict[str, DisruptionPolicy] = {}
    errors: list[PolicyConflictError] = []
    for pool in nodepools:
        try:
            policy = policy_for(pool, policies)
        except PolicyConflictError as exc:
            errors.append(exc)
            continue
        if policy is not None:
            chosen[pool.name] = policy
    return chosen, errors


def load_disruption_policy(data: dict[str, Any]) -> DisruptionPolicy:
    """Build a DisruptionPolicy from a dict (as read from YAML or the API)."""
    return DisruptionPolicy.model_validate(data)
