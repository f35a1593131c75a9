"""The stand-in's spot market model (devstack.spot_prices): deterministic, a fraction of on-demand, moving by hour."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from devstack import spot_prices

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PAIRS = [(t, z) for t in ("m5.large", "c6g.xlarge", "r6i.4xlarge") for z in ("eu-west-1a", "eu-west-1b", "eu-west-1c")]


def _od(instance_type: str) -> float:
    return {"m5.large": 0.096, "c6g.xlarge": 0.136, "r6i.4xlarge": 1.008}[instance_type]


def test_a_day_of_history_has_several_changes_per_pair_in_chronological_order() -> None:
    records = spot_prices.history(PAIRS, _od, START, START + timedelta(hours=24))
    assert [r.timestamp for r in records] == sorted(r.timestamp for r in records)
    for pair in PAIRS:
        stamps = [r.timestamp for r in records if (r.instance_type, r.zone) == pair]
        assert len(stamps) >= 24 // spot_prices.MAX_GAP_HOURS
        assert stamps[0] <= START < stamps[1]  # the first is the price in force at the window's start
        gaps = [(b - a).total_seconds() / 3600 for a, b in itertools.pairwise(stamps)]
        assert max(gaps) <= spot_prices.MAX_GAP_HOURS


def test_prices_are_25_to_45_percent_of_on_demand_and_differ_by_zone_type_and_hour() -> None:
    records = spot_prices.history(PAIRS, _od, START, START + timedelta(hours=24))
    for r in records:
        assert 0.25 <= float(r.price) / _od(r.instance_type) <= 0.45
    per_zone = {r.zone: r.price for r in records if r.instance_type == "m5.large" and r.timestamp <= START}
    assert len(set(per_zone.values())) > 1
    one_pair = {r.price for r in records if (r.instance_type, r.zone) == PAIRS[0]}
    assert len(one_pair) > 1


def test_the_same_query_gives_the_same_prices() -> None:
    a = spot_prices.history(PAIRS, _od, START, START + timedelta(hours=6))
    b = spot_prices.history(list(reversed(PAIRS)), _od, START, START + timedelta(hours=6))
    assert a == b


def test_filters_use_ec2_wildcards_and_skip_types_without_a_reference_price() -> None:
    records = spot_prices.history(PAIRS, _od, START, START, {"instance-type": ["m5.*"],
                                                             "availability-zone": ["eu-west-1?"]})
    assert {r.instance_type for r in records} == {"m5.large"} and len(records) == 3
    assert spot_prices.history(PAIRS, _od, START, START, {"product-description": ["Windows"]}) == []
    assert spot_prices.history([("x9.large", "eu-west-1a")], lambda _t: None, START, START) == []


def test_window_defaults_to_the_last_day_and_never_reaches_past_now() -> None:
    now = datetime(2026, 3, 2, tzinfo=UTC)
    assert spot_prices.window(None, None, now) == (now - timedelta(hours=24), now)
    assert spot_prices.window(now + timedelta(hours=1), None, now) == (now, now)
    start, end = spot_prices.window(now - timedelta(days=400), now - timedelta(hours=1), now)
    assert (start, end) == (now - spot_prices.OLDEST, now - timedelta(hours=1))


def test_reference_price_is_the_tables_else_another_regions_else_a_size_estimate() -> None:
    assert spot_prices.reference_on_demand("us-east-1", "m5.large", 2, 8192) == 0.096
    assert spot_prices.reference_on_demand("xx-nowhere-1", "m5.large", 2, 8192) == 0.096
    assert spot_prices.reference_on_demand("us-east-1", "zz9.large", 2, 8192) == round(
        2 * spot_prices.PER_VCPU_HOUR + 8 * spot_prices.PER_GIB_HOUR, 4)
    assert spot_prices.reference_on_demand("us-east-1", "zz9.large", None, None) is None
