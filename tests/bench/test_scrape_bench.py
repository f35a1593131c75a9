"""bench/scrape.py prints its figures, and both writers write the same scrape of the same cluster."""

from __future__ import annotations

import json

import pytest

from bench.scrape import main


def test_both_writers_write_the_same_scrape_and_the_figures_are_printed(capsys: pytest.CaptureFixture[str]) -> None:
    out = {}
    for writer in ("render", "generate_latest"):
        main(["--nodes", "10", "--pods-per-node", "3", "--scrapes", "2", "--writer", writer])
        out[writer] = json.loads(capsys.readouterr().out)
    assert out["render"]["lines"] == out["generate_latest"]["lines"] > 10 * 3
    assert out["render"]["bytes"] == out["generate_latest"]["bytes"]
    assert out["render"]["pods"] == 30 and out["render"]["partial"] is True
    assert out["render"]["scrapeCpuSecondsMedian"] >= 0


def test_a_single_scrape_is_refused() -> None:
    with pytest.raises(SystemExit):
        main(["--scrapes", "1"])
