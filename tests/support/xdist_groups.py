"""`--dist loadgroup` keeps each `xdist_group` on one worker again under pytest >= 9.2.

pytest-xdist 3.8 groups tests by appending `@<group>` to each item's node id in the worker
(`item._nodeid = ...`), but pytest 9.2 derives `item.nodeid` from a structured `item._id`, so that assignment no
longer shows: the groups were silently spread over both workers (pytest-dev/pytest-xdist#1386), each worker ran
the session-scoped demo fixture of tests/e2e/test_demo.py (two demo runs per `make test`), and chaos ran beside the
three-cluster fleet test, which its "heavy" group is there to prevent. This hook, run after xdist's, adds the
suffix where it is missing; with a pytest where xdist's own assignment works it finds the suffix and does nothing.

It also puts the longest work first, as a scheduler of unequal jobs on a few machines should: the groups (each
chaos seed, the demo, the fleet), then the end-to-end tests and benchmarks' runs, then the rest, each part in
collection order. xdist hands out work in that order; with the groups where pytest collects them, the chaos seeds
started minutes in and were the run's last four minutes alone. Every worker sorts alike (xdist checks that its
workers collected the same order).
"""

from __future__ import annotations

import pytest


def group_suffix(item: pytest.Item) -> str:
    """`@<group>` as xdist names it (its groups sorted and joined by `_`), or "" for an ungrouped test."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "@" + "_".join(sorted(names)) if names else ""


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # xdist sets it in its workers under --dist loadgroup
        return
    from _pytest.nodeid import NodeId

    for item in items:
        suffix = group_suffix(item)
        if suffix and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]
    items.sort(key=run_order)  # stable: collection order within each part


LONG_DIRS = ("tests/e2e/", "tests/bench/", "tests/chaos/")


def run_order(item: pytest.Item) -> int:
    """0 for a grouped test (a group runs on one worker, so it is the longest unit), 1 for an end-to-end test or a
    benchmark's run, 2 for the rest."""
    if group_suffix(item):
        return 0
    return 1 if item.nodeid.startswith(LONG_DIRS) else 2
