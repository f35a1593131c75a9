"""The consolidation bench runs end to end in --quick mode and prints consistent figures."""

from __future__ import annotations

import json

from bench.consolidation import main


def test_quick_bench_prints_ratios_for_both_modes(capsys) -> None:
    assert main(["--quick", "--json", "--optimizer-seconds", "0.3"]) == 0
    data = json.loads(capsys.readouterr().out)
    (case,) = data["cases"]
    assert case["nodes"] == 20 and case["pods"] > 0
    bound, best = case["optimumBound"], case["bestKnownCostPerHour"]
    assert 0 < bound <= best <= case["optimumCostPerHour"] <= case["startCostPerHour"]
    for mode in ("karpenter", "optimize"):
        row = case[mode]
        # nothing beats the proven lower bound, and consolidation never makes the cluster dearer
        assert bound * 0.999 <= row["costPerHour"] <= case["startCostPerHour"]
        assert row["ratio"] == round(row["costPerHour"] / best, 4) >= 1.0
        assert data["summary"][mode]["worstRatio"] == row["ratio"]


def test_table_output_has_a_summary_line(capsys) -> None:
    assert main(["--quick", "--no-optimize", "--optimum-seconds", "1"]) == 0
    out = capsys.readouterr().out
    assert "KARPENTER$/H" in out and "mean ratio" in out
