"""bench/capacity_buffer.py at tiny scale: the report has its documented shape and the buffer's chunks were placed.
Timings are not checked: benchmarks print figures, they are not timed tests."""

from __future__ import annotations

import json

from bench.capacity_buffer import main, measure


def test_rows_without_and_with_a_buffer_and_the_chunks_placed() -> None:
    without, with_buffer = measure(nodes=20, runs=1, chunks=3)
    assert (without["buffer"], with_buffer["buffer"]) == ("without", "with")
    assert without["headroom"] == {}
    room = with_buffer["headroom"]["default/bench"]
    assert sum(room["existing"].values()) + room["new"] + room["failed"] == 3
    assert all(r["tickCpu"] >= 0 and r["passWall"] > 0 for r in (without, with_buffer))


def test_json_output_names_the_load(capsys) -> None:
    assert main(["--sizes", "10", "--runs", "1", "--chunks", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["loadStart"]) == 3 and [r["nodes"] for r in out["rows"]] == [10, 10]
