"""bench/planner_live.py on a small cluster, quickly: the simulator's own count shows a LIST pass making one LIST
per kind and the cache passes none, both paths decide the same, and the report has the documented shape."""

from __future__ import annotations

from bench.planner_live import run
from runtime.cluster_cache import KINDS


def test_cache_passes_make_no_list_and_decide_like_list_passes() -> None:
    report = run(nodes=30, list_passes=1, cache_passes=3, every=1.0)
    lp, cache = report["listEveryPass"], report["cache"]
    assert report["nodes"] == 30 and report["pods"] > 300
    assert lp["listRequests"] == len(KINDS) and lp["bytesReceived"] > 100_000
    assert cache["listRequestsPerPass"] == 0 and cache["bytesPerPass"] < 100_000
    assert cache["skipped"] == [] and cache["commands"] == lp["commands"]
    assert len(cache["steadyPasses"]) == 2 and cache["steadyPassSeconds"] > 0 and cache["workerRssMiB"] > 0
