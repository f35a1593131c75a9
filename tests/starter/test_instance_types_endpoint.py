"""`nodeflow instance-types` reaches AWS as the worker does: `--ec2-endpoint` / `NODEFLOW_EC2_ENDPOINT` for EC2 and
the Pricing API (boto3's AWS_ENDPOINT_URL is not needed), and missing credentials are one error naming what sets
them (they were a logged NoCredentialsError and then the CLI's error, two phrasings, neither saying what to set)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from starter.cli import run

ROOT = Path(__file__).resolve().parents[2]


def _no_aws_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "NODEFLOW_EC2", "KUBECONFIG"))}
    env.update({"HOME": str(tmp_path), "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")})
    return env


def test_missing_credentials_are_one_error_naming_the_variables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    for key, value in _no_aws_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("NODEFLOW_EC2_ENDPOINT", "http://127.0.0.1:9")  # never called: credentials come first
    assert run(["instance-types"]) == 1
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith("error: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    assert "nodeflow demo" in lines[0] and "NoCredentialsError" not in err


def _instance_types(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "starter.cli", "instance-types", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_workers_endpoint_variable_and_flag(cloud_endpoint: str, tmp_path: Path) -> None:
    """What the demo prints (NODEFLOW_EC2_ENDPOINT, AWS_REGION, the stand-in's credentials) is enough; the flag
    wins over the variable, and an unreachable endpoint is one error naming it."""
    env = _no_aws_env(tmp_path) | {"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                                   "AWS_SECRET_ACCESS_KEY": "testing", "NODEFLOW_EC2_ENDPOINT": cloud_endpoint}
    proc = _instance_types(env, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) > 400 and "on-demand prices from pricing-api" in proc.stderr
    dead = "http://127.0.0.1:9"
    proc = _instance_types(env | {"AWS_MAX_ATTEMPTS": "1"}, "--ec2-endpoint", dead)  # the flag over the variable
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("instance-types: ")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"error: cannot discover the instance types of us-east-1 at {dead}: ")


def test_the_workers_catalog_and_overhead_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """NODEFLOW_CATALOG and NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT mean what they mean to the worker (the flags win)."""
    from api.catalog import DEFAULT_CATALOG_PATH, load_default_catalog
    from gateways import instance_types

    seen: dict[str, object] = {}

    class _Provider:
        def __init__(self, ec2: object, pricing: object, *, overhead_percent: float, progress: object) -> None:
            seen.update(endpoint=ec2.meta.endpoint_url, overhead=overhead_percent)  # type: ignore[attr-defined]
            self.price_source = "test"

        def refresh(self) -> bool:
            return True

        def catalog(self) -> object:
            return load_default_catalog()

    monkeypatch.setattr(instance_types, "InstanceTypeProvider", _Provider)
    for key, value in {"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                       "NODEFLOW_EC2_ENDPOINT": "http://127.0.0.1:9", "NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT": "0.1"
                       }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    assert run(["instance-types", "-o", "json"]) == 0
    assert seen == {"endpoint": "http://127.0.0.1:9", "overhead": 0.1}
    assert run(["instance-types", "-o", "json", "--vm-memory-overhead-percent", "0.05"]) == 0
    assert seen["overhead"] == 0.05
    seen.clear()
    monkeypatch.setenv("NODEFLOW_CATALOG", str(DEFAULT_CATALOG_PATH))
    capsys.readouterr()
    assert run(["instance-types", "-o", "json"]) == 0 and seen == {}  # the catalog file: no discovery
    assert len(json.loads(capsys.readouterr().out)) == len(load_default_catalog().instance_types)
