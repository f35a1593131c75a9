"""The worker refuses a plaintext Temporal connection that would leave the machine, unless told explicitly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from client.connection import InsecureTemporalAddress, check_transport, is_loopback

ROOT = Path(__file__).resolve().parents[2]
# `.invalid` never resolves (RFC 2606), and the check runs before any connection is attempted.
REMOTE = "temporal.nodeflow.invalid:7233"


@pytest.mark.parametrize("address", ["localhost:7233", "127.0.0.1:7233", "127.9.8.7:7233", "[::1]:7233"])
def test_loopback_addresses(address: str) -> None:
    assert is_loopback(address)
    check_transport(address, tls=False, api_key=None)


@pytest.mark.parametrize("address", [REMOTE, "10.0.0.5:7233", "[2001:db8::1]:7233", "my-namespace.tmprl.cloud:7233"])
def test_remote_plaintext_is_refused(address: str) -> None:
    assert not is_loopback(address)
    with pytest.raises(InsecureTemporalAddress, match="neither TLS nor an API key"):
        check_transport(address, tls=False, api_key=None)


def test_tls_or_an_api_key_makes_a_remote_address_acceptable() -> None:
    check_transport(REMOTE, tls=True, api_key=None)
    check_transport(REMOTE, tls=False, api_key="secret")


def _worker(*extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "worker.py"), "--address", REMOTE, *extra],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)


def test_the_worker_process_refuses_to_start() -> None:
    proc = _worker()
    assert proc.returncode == 2, proc.stderr
    assert "refusing to start" in proc.stderr and "--allow-insecure-temporal" in proc.stderr


def test_the_flag_or_the_environment_allows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allowed explicitly, the worker skips the check (its connect then runs without `require_secure`)."""
    import worker

    assert worker.parse_args(["--allow-insecure-temporal"]).allow_insecure_temporal
    assert not worker.parse_args([]).allow_insecure_temporal
    monkeypatch.setenv("NODEFLOW_TEMPORAL_ALLOW_INSECURE", "true")
    assert worker.parse_args([]).allow_insecure_temporal
