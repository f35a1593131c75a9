"""DisruptionPolicy model: the issue's shape round-trips, bad fields are errors with paths, and the resolver."""

from datetime import date, timedelta
from decimal import Decimal

import pytest
import yaml
from pydantic import ValidationError

from api.disruption_policy import (
    AckMode,
    DisruptionPolicy,
    OnTimeout,
    PolicyConflictError,
    policy_conflicts,
    policy_for,
    resolve_policies,
)
from api.nodepool import NodePool

FULL = """\
apiVersion: nodeflow.dev/v1alpha1
kind: DisruptionPolicy
metadata: {name: general-rollout}
spec:
  nodePools: [general]
  expiration: {gracefulExpireAfter: 600h}
  drift: {waves: [1, "10%", "100%"], bakeTime: 30m, maxFailedReplacements: 1, healthTimeout: 10m}
  hooks:
    preDisruption: {url: "http://hooks.example/pre", ack: Required, ackTimeout: 15m, onTimeout: Abandon}
    notify: {url: "http://hooks.example/notify"}
  escalation: {notifyAfter: 2h, forceAfter: 24h}
  consolidation: {minSavingsPerHour: "0.05", minSavingsPercent: 10}
  calendar:
    timeZone: Europe/Berlin
    exclusions: [{from: "2026-12-20", to: "2027-01-02"}]
    allowWindows: [{schedule: "0 1 * * 1-5", duration: 4h}]
"""


def _policy(name: str, **spec) -> DisruptionPolicy:
    return DisruptionPolicy.model_validate({"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy",
                                            "metadata": {"name": name}, "spec": spec})


def _pool(name: str, labels: dict | None = None) -> NodePool:
    return NodePool.model_validate({"metadata": {"name": name, "labels": labels}})


def test_full_shape_reads_and_round_trips():
    data = yaml.safe_load(FULL)
    p = DisruptionPolicy.model_validate(data)
    assert p.name == "general-rollout"
    assert p.graceful_expire_after == timedelta(hours=600)
    assert p.spec.drift.waves == [1, "10%", "100%"]
    assert p.spec.drift.bake == timedelta(minutes=30)
    assert p.spec.hooks.pre_disruption.ack is AckMode.REQUIRED
    assert p.spec.hooks.pre_disruption.on_timeout is OnTimeout.ABANDON
    assert p.spec.hooks.pre_disruption.ack_wait == timedelta(minutes=15)
    assert p.spec.escalation.force == timedelta(hours=24)
    assert p.spec.consolidation.min_per_hour == Decimal("0.05")
    assert p.spec.calendar.exclusions[0].from_ == date(2026, 12, 20)
    assert p.to_dict() == data


def test_yaml_dates_are_accepted_but_money_must_be_a_string():
    p = _policy("p", nodePools=["a"], calendar={"exclusions": [{"from": date(2026, 12, 24)}]})
    assert p.spec.calendar.exclusions[0].last == date(2026, 12, 24)
    with pytest.raises(ValidationError, match="quoted decimal string"):
        _policy("p", nodePools=["a"], consolidation={"minSavingsPerHour": 0.05})


@pytest.mark.parametrize(("spec", "where"), [
    ({}, "spec"),
    ({"nodePools": ["a"], "nodePoolSelector": {}}, "spec"),
    ({"nodePools": ["a"], "drift": {"waves": [0]}}, "spec.drift.waves"),
    ({"nodePools": ["a"], "drift": {"waves": ["150%"]}}, "spec.drift.waves"),
    ({"nodePools": ["a"], "drift": {"waves": [1.5]}}, "spec.drift.waves"),
    ({"nodePools": ["a"], "drift": {"bakeTime": "soon"}}, "spec.drift.bakeTime"),
    ({"nodePools": ["a"], "drift": {"healthTimeout": "0s"}}, "spec.drift.healthTimeout"),
    ({"nodePools": ["a"], "hooks": {"preDisruption": {"url": "http://x", "ack": "Maybe"}}},
     "spec.hooks.preDisruption.ack"),
    ({"nodePools": ["a"], "hooks": {"preDisruption": {"url": "http://x", "onTimeout": "Later"}}},
     "spec.hooks.preDisruption.onTimeout"),
    ({"nodePools": ["a"], "escalation": {"notifyAfter": "2h", "forceAfter": "1h"}}, "spec.escalation"),
    ({"nodePools": ["a"], "consolidation": {"minSavingsPerHour": "five"}}, "spec.consolidation.minSavingsPerHour"),
    ({"nodePools": ["a"], "calendar": {"timeZone": "Mars/Olympus"}}, "spec.calendar.timeZone"),
    ({"nodePools": ["a"], "calendar": {"exclusions": [{"from": "2026-12-20", "to": "2026-12-01"}]}},
     "spec.calendar.exclusions.0"),
    ({"nodePools": ["a"], "calendar": {"allowWindows": [{"schedule": "61 * * * *", "duration": "1h"}]}},
     "spec.calendar.allowWindows.0.schedule"),
    ({"nodePools": ["a"], "drift": {"wavez": [1]}}, "spec.drift.wavez"),
])
def test_bad_fields_are_errors_at_their_path(spec, where):
    with pytest.raises(ValidationError) as err:
        _policy("p", **spec)
    paths = {".".join(str(x) for x in e["loc"]) for e in err.value.errors()}
    assert any(p.startswith(where) for p in paths), paths


def test_wave_targets_are_cumulative_and_finish_the_pool():
    d = _policy("p", nodePools=["a"], drift={"waves": [1, "10%", "25%", "100%"]}).spec.drift
    assert d.wave_targets(40) == [1, 4, 10, 40]
    assert d.wave_targets(3) == [1, 3]
    d2 = _policy("p", nodePools=["a"], drift={"waves": [2, "50%"]}).spec.drift
    assert d2.wave_targets(10) == [2, 5, 10]
    assert d2.wave_targets(0) == []


def test_policy_for_by_name_and_selector():
    by_name = _policy("by-name", nodePools=["general"])
    by_label = _policy("by-label", nodePoolSelector={"matchLabels": {"tier": "batch"}})
    assert policy_for(_pool("general"), [by_name, by_label]) is by_name
    assert policy_for(_pool("jobs", {"tier": "batch"}), [by_name, by_label]) is by_label
    assert policy_for(_pool("other"), [by_name, by_label]) is None
    expr = _policy("expr", nodePoolSelector={"matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                                    "values": ["batch"]}]})
    assert policy_for(_pool("x"), [expr]) is expr
    assert policy_for(_pool("x", {"tier": "batch"}), [expr]) is None


def test_two_policies_on_one_pool_name_both():
    a = _policy("zeta", nodePools=["general"])
    b = _policy("alpha", nodePoolSelector={})
    with pytest.raises(PolicyConflictError) as err:
        policy_for(_pool("general"), [a, b])
    assert (err.value.nodepool, err.value.first, err.value.second) == ("general", "alpha", "zeta")
    assert "'alpha'" in str(err.value) and "'zeta'" in str(err.value)
    chosen, conflicts = resolve_policies([_pool("general"), _pool("other")], [a, b])
    assert chosen == {"other": b} and [c.nodepool for c in conflicts] == ["general"]
    assert len(policy_conflicts([_pool("general")], [a, b])) == 1
