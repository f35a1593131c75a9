"""docs/configuration.md stays in sync with the worker: every flag and environment variable it reads."""

from __future__ import annotations

import re
from pathlib import Path

import worker

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "configuration.md").read_text()
SOURCES = [ROOT / "worker.py", ROOT / "client" / "connection.py"]


def test_every_worker_flag_is_documented() -> None:
    flags = ["--" + dest.replace("_", "-") for dest in vars(worker.parse_args([]))]
    assert len(flags) >= 10
    missing = [f for f in flags if f"`{f}`" not in DOC]
    assert not missing, f"undocumented worker flags: {missing}"


def test_every_environment_variable_is_documented() -> None:
    names: set[str] = set()
    for source in SOURCES:
        names |= set(re.findall(r"""env\(\s*["']([A-Z][A-Z0-9_]+)["']""", source.read_text()))
        names |= set(re.findall(r"""environ\.get\(\s*["']([A-Z][A-Z0-9_]+)["']""", source.read_text()))
    assert "NODEFLOW_INTERRUPTION_QUEUE" in names and "NODEFLOW_TEMPORAL_ADDRESS" in names
    missing = sorted(n for n in names if f"`{n}`" not in DOC and n != "KUBERNETES_SERVICE_HOST")
    assert not missing, f"undocumented environment variables: {missing}"
