"""DisruptionPolicy round-two fields: accepted shapes, refused values, the typed accessors."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from api.disruption_policy import load_disruption_policy
from api.policy_controls import JobsDrain


def _policy(**spec: Any):
    return load_disruption_policy({"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy",
                                   "metadata": {"name": "p"}, "spec": {"nodePools": ["default"], **spec}})


def test_the_issue_example_loads_with_typed_values() -> None:
    p = _policy(drain={"jobs": "Wait", "maxWait": "2h"}, spot={"returnAfter": "30m", "maxOnDemandFraction": "25%"},
                provisioning={"zoneBalance": 1, "deprecated": False}, limits={"costPerHour": "12.50"},
                expiration={"gracefulExpireAfter": "600h", "jitter": "10%"})
    assert p.spec.drain.jobs is JobsDrain.WAIT and p.spec.drain.wait == timedelta(hours=2)
    assert p.spec.spot.return_delay == timedelta(minutes=30) and p.spec.spot.on_demand_cap == Decimal("0.25")
    assert p.spec.provisioning.zone_balance == 1 and p.spec.provisioning.deprecated is False
    assert p.spec.limits.cost_limit == Decimal("12.50")
    assert p.spec.expiration.jitter_fraction == Decimal("0.1")


def test_defaults_keep_todays_behaviour() -> None:
    p = _policy(drain={})
    assert p.spec.drain.jobs is JobsDrain.EVICT and p.spec.drain.wait is None
    assert p.spec.spot is None and p.spec.limits is None and p.spec.provisioning is None


@pytest.mark.parametrize(("spec", "words"), [
    ({"drain": {"jobs": "Maybe"}}, "jobs"),
    ({"drain": {"maxWait": "2d"}}, "duration"),
    ({"spot": {"maxOnDemandFraction": 0.25}}, "percentage"),
    ({"spot": {"maxOnDemandFraction": "101%"}}, "percentage"),
    ({"provisioning": {"zoneBalance": 0}}, "greater than or equal to 1"),
    ({"limits": {"costPerHour": 12.5}}, "decimal string"),
    ({"limits": {"costPerHour": "-1"}}, "decimal amount"),
    ({"expiration": {"jitter": "10"}}, "percentage"),
    ({"spot": {"returnAfterr": "30m"}}, "returnAfterr"),
])
def test_bad_values_are_refused_naming_the_problem(spec: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as err:
        _policy(**spec)
    assert words in str(err.value)
