"""The fleet launch bench runs end to end at tiny scale: each launch API launches every node, the fleet with one
CreateFleet per node and no RunInstances, RunInstances with a refused call per ICE'd zone it meets."""

from __future__ import annotations

from bench.fleet_launch import main


def test_tiny_run_compares_both_launch_apis(capsys) -> None:
    rows = main(["--nodes", "3", "--concurrency", "3", "--ec2-latency-ms", "0"])
    assert [(r["api"], r["cache"]) for r in rows] == [("run-instances", "3 min"), ("fleet", "3 min"),
                                                      ("run-instances", "off"), ("fleet", "off")]
    for row in rows:
        assert sum(row["types"].values()) == 3 and "t3.large" not in row["types"]  # the ICE'd family never runs
        assert 0 < row["p50_s"] <= row["max_s"] <= row["wall_s"] + 0.01  # rounded apart
        if row["api"] == "fleet":
            assert row["launch_calls"] == {"RunInstances": 0, "CreateFleet": 3}
    cold = {r["api"]: r for r in rows if r["cache"] == "off"}  # every launch meets the ICE in all three zones
    assert cold["run-instances"]["launch_calls"]["RunInstances"] == 3 * (3 + 1)
    assert cold["run-instances"]["refused_offerings"] == cold["fleet"]["refused_offerings"] == 9
    assert capsys.readouterr().out.count('"api"') == 4
