"""The soak's figures and verdict (bench/soak_summary.py) on hand-made samples: no stack, no soak."""

from __future__ import annotations

from bench.soak_summary import (
    history_figures,
    rss_figures,
    rss_growth_by_life,
    safety_counts,
    verdict,
    warmup_seconds,
)


def _row(t: float, rss: float, events: int = 10, run: str = "r1") -> dict:
    return {"t": t, "workerRssMiB": rss, "poller": {"events": events, "bytes": events * 100, "runId": run}}


def test_growth_is_measured_after_warm_up_only() -> None:
    rows = [_row(0, 100), _row(60, 180)] + [_row(300 + 60 * i, 200 + i) for i in range(10)]
    rss = rss_figures(rows, warmup=300)
    assert rss["atWarmupMiB"] == 200 and rss["endMiB"] == 209 and rss["peakMiB"] == 209
    assert rss["growthMiBPerHour"] == 60.0  # 1 MiB a minute, the warm-up's climb left out
    assert warmup_seconds(3600) == 300 and warmup_seconds(180) == 45


def test_history_keeps_the_longest_run_and_counts_runs() -> None:
    rows = [_row(0, 1, 10, "a"), _row(1, 1, 90, "a"), _row(2, 1, 5, "b"), {"t": 3, "poller": None}]
    assert history_figures(rows, ("poller", "other")) == {
        "poller": {"maxEvents": 90, "maxBytes": 9000, "lastEvents": 5, "runsSeen": 2}}


def test_any_safety_count_pending_pod_or_missed_convergence_fails() -> None:
    found = {"pdbViolations": 0, "leakedInstances": [], "duplicateTerminations": {}, "failedWorkflows": [],
             "launchedByNodeflow": 40}
    counts = safety_counts(found)
    assert counts == {"pdbViolations": 0, "leakedInstances": 0, "duplicateTerminations": 0, "failedWorkflows": 0}
    assert verdict(counts, 0, True) == []
    assert verdict({**counts, "leakedInstances": 2}, 0, True) == ["leakedInstances=2"]
    assert verdict(counts, 3, False, unfinished=1) == ["podsPendingAtEnd=3", "unfinishedWorkflows=1",
                                                       "did not converge in time"]


def test_growth_by_life_starts_each_life_afresh_and_skips_short_ones() -> None:
    rows = []
    for i in range(40):  # a#1 lives 0..1170 s climbing 1 MiB/min; b#1 lives throughout, flat; a#2 is too short
        lives = {"b#1": 150.0}
        if i < 20:
            lives["a#1"] = 100.0 + i
        elif i > 35:
            lives["a#2"] = 50.0
        rows.append({"t": 60.0 * i, "rssByLife": lives})
    growth = rss_growth_by_life(rows, warmup=300, min_span=600)
    assert growth == {"a#1": 60.0, "b#1": 0.0}
