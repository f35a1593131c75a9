"""The suite's run order (tests/support/xdist_groups.py): xdist hands out work in collection order, so the longest
units go first: a group (one worker runs it whole), then end-to-end tests and benchmarks' runs, then the rest."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from support.xdist_groups import group_suffix, run_order


@dataclass
class Item:
    nodeid: str
    groups: list[str] = field(default_factory=list)

    def iter_markers(self, name: str) -> list[pytest.Mark]:
        assert name == "xdist_group"
        return [pytest.mark.xdist_group(g).mark for g in self.groups]


def test_groups_first_then_end_to_end_and_benches_then_the_rest_in_collection_order() -> None:
    items = [Item("tests/api/test_a.py::t"), Item("tests/e2e/test_x.py::t"), Item("tests/chaos/test_chaos.py::t[7]",
             ["chaos-7"]), Item("tests/bench/test_b.py::t"), Item("tests/e2e/test_demo.py::t", ["demo"]),
             Item("tests/planning/test_p.py::t"), Item("tests/chaos/test_chaos_audit.py::t")]
    ordered = sorted(items, key=run_order)  # type: ignore[arg-type]
    assert [i.nodeid for i in ordered] == [
        "tests/chaos/test_chaos.py::t[7]", "tests/e2e/test_demo.py::t", "tests/e2e/test_x.py::t",
        "tests/bench/test_b.py::t", "tests/chaos/test_chaos_audit.py::t", "tests/api/test_a.py::t",
        "tests/planning/test_p.py::t"]


def test_a_groups_suffix_names_its_groups_sorted_as_xdist_does() -> None:
    assert group_suffix(Item("t", ["b", "a"])) == "@a_b"  # type: ignore[arg-type]
    assert group_suffix(Item("t")) == ""  # type: ignore[arg-type]
