"""Every AWS client the worker builds is in the one region resolved at startup (the IAM client had
none, so a cluster exporting only AWS_REGION failed with "You must specify a region")."""

from __future__ import annotations

import pytest

import worker
from runtime.cloud_clients import RegionNotConfigured, aws_clients, resolve_region
from runtime.settings import Deps

ENDPOINT = "http://127.0.0.1:1"  # never called: building a client sends nothing


def _regions(region: str) -> dict[str, str]:
    clients = aws_clients(region, ec2_endpoint=ENDPOINT)
    return {name: getattr(clients, name).meta.region_name for name in ("ec2", "sqs", "ssm", "iam")}


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")  # no profile region either
    return monkeypatch


def test_only_aws_region_set_reaches_every_client(bare_env: pytest.MonkeyPatch) -> None:
    bare_env.setenv("AWS_REGION", "eu-west-3")
    region = resolve_region(worker.parse_args([]).region)
    assert _regions(region) == {"ec2": "eu-west-3", "sqs": "eu-west-3", "ssm": "eu-west-3", "iam": "eu-west-3"}


def test_only_the_flag_reaches_every_client(bare_env: pytest.MonkeyPatch) -> None:
    region = resolve_region(worker.parse_args(["--region", "ap-southeast-2"]).region)
    assert set(_regions(region).values()) == {"ap-southeast-2"}


def test_the_flag_wins_then_aws_region_then_aws_default_region() -> None:
    env = {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-west-2"}
    assert resolve_region("ca-central-1", env) == "ca-central-1"
    assert resolve_region(None, env) == "eu-west-1"
    assert resolve_region(None, {"AWS_DEFAULT_REGION": "us-west-2"}) == "us-west-2"


def test_no_region_is_a_startup_error_naming_the_three_sources() -> None:
    with pytest.raises(RegionNotConfigured) as err:
        resolve_region(None, {})
    assert all(source in str(err.value) for source in ("--region", "AWS_REGION", "AWS_DEFAULT_REGION"))


def test_the_default_ssm_client_follows_the_ec2_region(bare_env: pytest.MonkeyPatch) -> None:
    clients = aws_clients("eu-north-1", ec2_endpoint=ENDPOINT)
    deps = Deps(kube_api=None, ec2=clients.ec2)
    assert deps.ssm_client.meta.region_name == "eu-north-1"


def test_the_ec2_call_rate_flags_default_to_fifty_a_second_and_read_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    args = worker.parse_args([])
    assert (args.ec2_max_calls_per_second, args.ec2_call_burst) == (50.0, 100.0)
    assert worker.parse_args(["--ec2-max-calls-per-second", "0"]).ec2_max_calls_per_second == 0
    monkeypatch.setenv("NODEFLOW_EC2_MAX_CALLS_PER_SECOND", "7.5")
    assert worker.parse_args([]).ec2_max_calls_per_second == 7.5
