"""bench/planner_catalogs.py at tiny scale: both workers plan (one on the bundled catalog, one on the catalog it
discovered from the EC2 stand-in), the rounds alternate, and the report has its documented shape. Timings are
not checked: benchmarks print figures, they are not timed tests."""

from __future__ import annotations

from bench.planner_catalogs import CATALOGS, _rounds, figures, quantile, run


def test_quantile_interpolates_between_order_statistics() -> None:
    assert quantile([3.0], 0.9) == 3.0
    assert quantile([1.0, 2.0], 0.5) == 1.5
    assert round(quantile([float(i) for i in range(1, 11)], 0.9), 6) == 9.1


def test_side_by_side_report_shape_at_tiny_scale(cloud_endpoint: str) -> None:
    report = run(nodes=20, rounds=1, every=0.5, endpoint=cloud_endpoint)  # the session's stand-in, not a second one
    assert report["nodes"] == 20 and report["pods"] > 200
    assert report["partial"] is False and report["rounds"] == 1 and "stopped" not in report
    assert set(report["loadAverage"]) == {"start", "end"} and len(report["loadAverage"]["start"]) == 3
    assert set(report["catalogs"]) == set(CATALOGS)
    bundled, discovered = report["catalogs"]["bundled"], report["catalogs"]["discovered"]
    assert 40 <= bundled["instanceTypes"] < 100 and "discoverySeconds" not in bundled
    assert discovered["instanceTypes"] > 300 and discovered["region"] == "us-east-1"
    assert discovered["onDemandPrices"] == "pricing-api" and discovered["offerings"] > discovered["instanceTypes"]
    assert 300 < discovered["instanceTypesAvailable"] <= discovered["instanceTypes"]
    assert bundled["plannedOnTypes"] == bundled["instanceTypes"] and report["consolidating"] is False
    assert discovered["plannedOnTypes"] == discovered["instanceTypes"]  # the passes planned on what was discovered
    for fig in (bundled, discovered):
        assert len(fig["passes"]) == 1 and fig["skipped"] == [] and isinstance(fig["methods"], list)
        assert fig["passSecondsMedian"] == fig["passSecondsP90"] == fig["passes"][0]
        assert fig["firstPassSeconds"] is not None and fig["workerRssMiB"] >= fig["rssAfterCatalogMiB"] > 0


def test_a_budget_spent_before_the_rounds_says_so_and_the_figures_hold_no_median() -> None:
    rows, stopped = _rounds({}, None, rounds=3, every=0.5, deadline=0.0)  # type: ignore[arg-type]
    assert rows == {} and stopped == "budget reached after 0 of 3 rounds"
    hello = {"instanceTypes": 49, "syncSeconds": 0.5, "catalogRssMiB": 90, "rssMiB": 120}
    first = {"seconds": 1.5, "cpuSeconds": 1.0, "rssMiB": 130, "commands": 0, "skipped": None}
    partial = figures(hello, first, [])
    assert partial["passes"] == [] and "passSecondsMedian" not in partial
    assert partial["firstPassSeconds"] == 1.5 and partial["workerRssMiB"] == 130
