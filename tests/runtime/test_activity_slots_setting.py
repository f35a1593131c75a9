"""`--max-concurrent-activities` (NODEFLOW_MAX_CONCURRENT_ACTIVITIES): the worker's activity slots, 500 unless set,
a whole number above 0, reaching the settings the Worker is built from (runtime/worker_loop.py build_worker)."""

from __future__ import annotations

import pytest

import worker


def test_the_default_the_flag_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODEFLOW_MAX_CONCURRENT_ACTIVITIES", raising=False)
    assert worker.settings_from(worker.parse_args([])).max_concurrent_activities == 500
    flagged = worker.parse_args(["--max-concurrent-activities", "200"])
    assert worker.settings_from(flagged).max_concurrent_activities == 200
    monkeypatch.setenv("NODEFLOW_MAX_CONCURRENT_ACTIVITIES", "100")
    assert worker.settings_from(worker.parse_args([])).max_concurrent_activities == 100


@pytest.mark.parametrize("bad", ["0", "-5", "lots", "1.5"])
def test_a_bad_value_stops_the_worker_at_start_with_why(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        worker.parse_args(["--max-concurrent-activities", bad])
    assert exc.value.code == 2
    assert "expected a whole number above 0" in capsys.readouterr().err
