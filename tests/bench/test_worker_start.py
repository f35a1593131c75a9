"""bench.worker_start at its smallest: one start of this tree's worker, ready and measured, and its refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import worker_start


def test_one_start_is_ready_and_measured() -> None:
    result = worker_start.run([worker_start.ROOT], starts=1)
    (figures,) = result.values()
    assert figures["starts"] == 1
    assert 0 < figures["readySeconds"]["median"] < worker_start.READY_TIMEOUT
    assert 0.3 < figures["cpuSeconds"]["median"] < 30  # a worker cannot load in less: the probe read a real process


def test_a_tree_without_a_worker_and_no_starts_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        worker_start.main(["--root", str(tmp_path)])
    assert "no worker.py in" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        worker_start.main(["--starts", "0"])
    assert "--starts must be at least 1" in capsys.readouterr().err
