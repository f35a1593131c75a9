"""The worker's --default-topology-spread reaches every simulation of the process
(planning/scheduling/default_spread.py, docs/configuration.md); a bad value stops the worker at start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import worker
from planning.scheduling import default_spread as ds
from runtime.settings import Settings, configure_scheduling


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    saved = ds.configured()
    yield
    ds.configure(saved)


def test_the_flag_defaults_to_none_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODEFLOW_DEFAULT_TOPOLOGY_SPREAD", raising=False)
    assert worker.parse_args([]).default_topology_spread == "none"
    monkeypatch.setenv("NODEFLOW_DEFAULT_TOPOLOGY_SPREAD", "system")
    assert worker.parse_args([]).default_topology_spread == "system"


def test_the_setting_configures_the_process(tmp_path: Path) -> None:
    configure_scheduling(Settings(default_topology_spread="system"))
    assert ds.configured() is ds.SYSTEM
    configure_scheduling(Settings())
    assert ds.configured() is ds.NONE
    f = tmp_path / "spread.json"
    f.write_text('[{"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]')
    configure_scheduling(Settings(default_topology_spread=str(f)))
    assert ds.configured().mode == ds.SpreadMode.LIST and ds.configured().source == str(f)
    with pytest.raises(ValueError, match="not none, system or a readable file"):
        configure_scheduling(Settings(default_topology_spread=str(tmp_path / "nope.yaml")))
