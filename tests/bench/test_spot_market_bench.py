"""The spot market bench runs end to end at tiny scale: the market's cheapest pools are the shallowest and the most
interrupted, cheapest-first lands there, price-capacity-optimized lands in a deep pool."""

from __future__ import annotations

from bench.spot_market import SCORES, main, market


def test_the_cheapest_pools_are_shallow_and_interrupted_most() -> None:
    pools = market(0.2)
    assert [p["price"] for p in pools] == sorted(p["price"] for p in pools)
    assert pools[0]["capacity"] == SCORES[0] and pools[-1]["capacity"] == SCORES[-1]
    assert pools[0]["rate_per_hour"] == 0.2 and pools[-1]["rate_per_hour"] == 0.02


def test_tiny_run_puts_cheapest_first_in_shallow_pools_and_the_fleet_in_deep_ones() -> None:
    rows = {r["api"]: r for r in main(["--nodes", "2", "--hours", "1", "--seed", "3"])}
    deep = {f"{p['type']}/{p['zone']}" for p in market(0.2) if p["capacity"] == SCORES[-1]}
    shallow = {f"{p['type']}/{p['zone']}" for p in market(0.2) if p["capacity"] == SCORES[0]}
    assert set(rows["fleet"]["top_pools_node_hours"]) <= deep
    assert set(rows["run-instances"]["top_pools_node_hours"]) <= shallow
    assert rows["fleet"]["mean_spot_price_per_node_hour"] > rows["run-instances"]["mean_spot_price_per_node_hour"]
    assert all(r["partial"] and r["node_hours"] == 2 for r in rows.values())
