"""The Kubernetes versions nodeflow supports (api/kube_version.py): a /version answer older than 1.25 (CEL
validation rules on by default) is refused in one line naming the version needed and the one found, by the worker
at start-up (exit 2, before Temporal) and by `nodeflow validate --kubeconfig`; the simulator (v1.32) passes. The
simulator's /version is made to answer an old version by patching its discovery document for the test."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from api.kube_version import MIN_KUBERNETES, server_version, too_old
from runtime.kube_version import kubeconfig_version_problem
from simulator import discovery

ROOT = Path(__file__).resolve().parents[2]
EKS_124 = {"major": "1", "minor": "24+", "gitVersion": "v1.24.17-eks-8cb36c9"}


@pytest.mark.parametrize(("info", "expected"), [
    ({"major": "1", "minor": "32", "gitVersion": "v1.32.0"}, (1, 32)),
    (EKS_124, (1, 24)),
    ({"major": "1", "minor": "28+"}, (1, 28)),  # no gitVersion: major/minor as managed clusters write them
    ({"git_version": "v1.29.3+k3s1"}, (1, 29)),  # the kubernetes client's attribute names
    ({"gitVersion": "unknown"}, None),
])
def test_server_version(info: dict[str, str], expected: tuple[int, int] | None) -> None:
    assert server_version(info) == expected


def test_too_old_names_the_version_needed_and_found_in_one_line() -> None:
    message = too_old(EKS_124, "the API server at https://x")
    assert message is not None and "\n" not in message
    assert "Kubernetes 1.25 or newer" in message
    assert message.endswith("the API server at https://x is v1.24.17-eks-8cb36c9")
    assert "CEL" in message
    assert too_old({"gitVersion": "v1.25.0"}) is None and too_old({"gitVersion": "v1.33.1"}) is None
    assert too_old({}) is None  # a server that does not say is not refused
    assert MIN_KUBERNETES == (1, 25)


@pytest.fixture
def old_sim(sim: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setitem(discovery.VERSION_INFO, "minor", "24")
    monkeypatch.setitem(discovery.VERSION_INFO, "gitVersion", "v1.24.17")
    return sim


def test_the_simulator_is_new_enough(sim: Any) -> None:
    assert kubeconfig_version_problem(sim.kubeconfig_path) is None


def test_an_old_api_server_is_named_with_its_version(old_sim: Any) -> None:
    problem = kubeconfig_version_problem(old_sim.kubeconfig_path)
    assert problem is not None and problem.endswith(f"the API server at {old_sim.base_url} is v1.24.17")


async def test_the_worker_refuses_to_start_before_connecting_anywhere(old_sim: Any,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    import worker

    # a Temporal address nothing listens on: the refusal comes first
    args = worker.parse_args(["--kubeconfig", old_sim.kubeconfig_path, "--address", "127.0.0.1:9"])
    with caplog.at_level(logging.ERROR, logger="nodeflow.worker"):
        assert await worker.amain(args) == 2
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert line.startswith("refusing to start: nodeflow needs Kubernetes 1.25 or newer") and "v1.24.17" in line


def test_the_worker_process_exits_non_zero_with_the_message(old_sim: Any) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "worker.py"), "--kubeconfig", old_sim.kubeconfig_path,
                           "--address", "127.0.0.1:9"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "needs Kubernetes 1.25 or newer" in proc.stderr and "is v1.24.17" in proc.stderr


def test_validate_with_a_kubeconfig_says_the_cluster_is_too_old(old_sim: Any,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from starter.cli import run

    example = str(ROOT / "examples" / "nodepool-maintenance-window.yaml")
    assert run(["validate", "-f", example, "--kubeconfig", old_sim.kubeconfig_path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "needs Kubernetes 1.25 or newer" in out[0] and out[0].endswith("is v1.24.17")


def test_validate_with_a_kubeconfig_of_a_supported_cluster_is_valid(sim: Any,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from starter.cli import run

    example = str(ROOT / "examples" / "nodepool-maintenance-window.yaml")
    assert run(["validate", "-f", example, "--kubeconfig", sim.kubeconfig_path]) == 0
    assert capsys.readouterr().out == "valid\n"
