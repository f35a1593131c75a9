"""planning/pricing/unavailable_offerings.py: offerings EC2 refused are unavailable to launches and plans for 3
minutes."""

from __future__ import annotations

from planning_factory import nodepool, pod, snapshot

from api import labels as L
from api.catalog import load_default_catalog
from planning.pricing.unavailable_offerings import (
    TTL_SECONDS,
    UnavailableOfferings,
    UnavailableReason,
    with_unavailable,
    without_offerings,
)
from planning.provisioning.provisioner import decide

ICE = UnavailableReason.INSUFFICIENT_INSTANCE_CAPACITY


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_mark_lasts_three_minutes_then_expires() -> None:
    clock = FakeClock()
    cache = UnavailableOfferings(clock)
    cache.mark("m5.large", "us-east-1a", "spot", ICE)
    assert cache.unavailable("m5.large", "us-east-1a", "spot")
    assert not cache.unavailable("m5.large", "us-east-1b", "spot")  # the zone counts
    assert not cache.unavailable("m5.large", "us-east-1a", "on-demand")  # and the capacity type
    clock.now += TTL_SECONDS - 1
    assert cache.unavailable("m5.large", "us-east-1a", "spot")
    clock.now += 1
    assert not cache.unavailable("m5.large", "us-east-1a", "spot")
    assert TTL_SECONDS == 180


def test_marking_again_extends_the_entry() -> None:
    clock = FakeClock()
    cache = UnavailableOfferings(clock)
    cache.mark("m5.large", "us-east-1a", "spot", ICE)
    clock.now += 120
    cache.mark("m5.large", "us-east-1a", "spot", UnavailableReason.SPOT_INTERRUPTION)
    clock.now += 120  # 240 s after the first mark, 120 after the second
    assert cache.unavailable("m5.large", "us-east-1a", "spot")


def test_apply_marks_only_those_offerings_and_leaves_the_catalog_alone() -> None:
    catalog = load_default_catalog()
    cache = UnavailableOfferings(FakeClock())
    assert cache.apply(catalog) is catalog  # nothing marked: no copy
    cache.mark("m5.large", "us-east-1a", "on-demand", ICE)
    out = cache.apply(catalog)
    it = out.get("m5.large")
    assert it is not None and it.offering("us-east-1a", "on-demand").available is False
    assert it.offering("us-east-1a", "spot").available and it.offering("us-east-1b", "on-demand").available
    assert catalog.get("m5.large").offering("us-east-1a", "on-demand").available  # the original is untouched
    assert out.get("m5.xlarge") is catalog.get("m5.xlarge")  # types without marks are shared
    assert it.cheapest({"us-east-1a"}, {"on-demand"}) is None


def test_apply_is_cached_until_the_set_changes() -> None:
    clock = FakeClock()
    catalog = load_default_catalog()
    cache = UnavailableOfferings(clock)
    cache.mark("m5.large", "us-east-1a", "on-demand", ICE)
    first, seq = cache.apply(catalog), cache.seq
    assert cache.apply(catalog) is first and cache.seq == seq
    cache.mark("c5.large", "us-east-1b", "spot", ICE)
    assert cache.seq != seq
    second = cache.apply(catalog)
    assert second is not first and not second.get("c5.large").offering("us-east-1b", "spot").available
    seq = cache.seq
    clock.now += TTL_SECONDS
    assert cache.seq != seq  # an expiry is a change too
    assert cache.apply(catalog) is catalog


def test_on_mark_reports_the_reason() -> None:
    seen: list[UnavailableReason] = []
    cache = UnavailableOfferings(FakeClock(), on_mark=seen.append)
    cache.mark("m5.large", "us-east-1a", "spot", UnavailableReason.SPOT_INTERRUPTION)
    assert seen == [UnavailableReason.SPOT_INTERRUPTION]


def test_with_unavailable_passes_absent_parts_through() -> None:
    catalog = load_default_catalog()
    assert with_unavailable(None, UnavailableOfferings()) is None
    assert with_unavailable(catalog, None) is catalog


def test_an_unknown_type_changes_nothing() -> None:
    catalog = load_default_catalog()
    assert without_offerings(catalog, {("x9.huge", "us-east-1a", "spot")}) is catalog


def test_the_next_provisioning_plan_avoids_a_marked_offering() -> None:
    """A pod that must run in us-east-1a on m5.large or m5.xlarge: m5.large normally; m5.xlarge while EC2 has
    no m5.large there (the plan never names an offering the launch would be refused again)."""
    reqs = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "m5.xlarge"]}]
    snap = snapshot(nodepool(requirements=reqs),
                    pod("web-0", None, cpu="1", node_selector={L.ZONE_LABEL: "us-east-1a"}, phase="Pending"))
    catalog = load_default_catalog()
    (before,) = decide(snap, catalog).launches
    assert before.replacement.instance_types[0] == "m5.large"
    clock = FakeClock()
    cache = UnavailableOfferings(clock)
    cache.mark("m5.large", "us-east-1a", "on-demand", ICE)
    (during,) = decide(snap, with_unavailable(catalog, cache)).launches
    assert during.replacement.instance_types == ["m5.xlarge"]
    clock.now += TTL_SECONDS
    (after,) = decide(snap, with_unavailable(catalog, cache)).launches
    assert after.replacement.instance_types[0] == "m5.large"
