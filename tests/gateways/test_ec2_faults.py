"""The gateway's side of the cloud's own failures: the call-rate token bucket, error kinds, throttling retries.

Pure: an injected clock and sleep, a fake client raising botocore's ClientError
(docs/reliability.md#the-clouds-own-failures). The same through boto3 and the EC2 stand-in's fault knob:
tests/activities/test_cloud_faults_launch.py.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest
from botocore.exceptions import ClientError

from gateways.ec2 import (
    CloudErrorKind,
    Ec2Gateway,
    RetryPolicy,
    classify,
    count_sdk_retries,
    iam_action,
    limit_call_rate,
)
from gateways.rate_limit import TokenBucket
from telemetry import metrics


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _error(code: str, operation: str = "RunInstances") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, operation)


def _sample(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


def test_the_bucket_lets_a_burst_through_then_paces_calls_at_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=20, burst=5, clock=clock, sleep=clock.sleep)
    waits = [bucket.acquire() for _ in range(9)]
    assert waits[:5] == [0.0] * 5 and clock.slept == pytest.approx([0.05] * 4)  # then one every 1/20 s
    clock.now += 10  # idle: the bucket refills to its burst, not beyond
    assert [bucket.acquire() for _ in range(6)][:5] == [0.0] * 5 and len(clock.slept) == 5


def test_a_thousand_calls_take_the_time_the_rate_says() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=20, burst=40, clock=clock, sleep=clock.sleep)
    start = clock.now
    for _ in range(1040):
        bucket.acquire()
    assert clock.now - start == pytest.approx(1000 / 20)


def test_a_rate_of_zero_is_no_limit() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=0, burst=1, clock=clock, sleep=clock.sleep)
    assert sum(bucket.acquire() for _ in range(100)) == 0 and clock.slept == []


@pytest.mark.parametrize(("code", "kind"), [
    ("RequestLimitExceeded", CloudErrorKind.THROTTLED), ("InsufficientInstanceCapacity",
                                                         CloudErrorKind.INSUFFICIENT_CAPACITY),
    ("UnauthorizedOperation", CloudErrorKind.UNAUTHORIZED), ("InvalidInstanceID.NotFound", CloudErrorKind.NOT_FOUND),
    ("InvalidParameterValue", CloudErrorKind.OTHER)])
def test_errors_are_classified_by_code(code: str, kind: CloudErrorKind) -> None:
    assert classify(_error(code)) is kind
    assert classify(ValueError(code)) is CloudErrorKind.OTHER  # never by message text


class FlakyClient:
    """Raises the scripted errors, then answers."""

    def __init__(self, *errors: str) -> None:
        self.errors = list(errors)
        self.calls = 0

    def terminate_instances(self, InstanceIds: list[str]) -> dict[str, Any]:
        self.calls += 1
        if self.errors:
            raise _error(self.errors.pop(0), "TerminateInstances")
        return {"TerminatingInstances": [{"InstanceId": i, "CurrentState": {"Name": "shutting-down"}}
                                         for i in InstanceIds]}


def test_throttling_is_retried_after_full_jitter_backoff_and_counted() -> None:
    clock = Clock()
    client = FlakyClient("RequestLimitExceeded", "RequestLimitExceeded")
    gateway = Ec2Gateway(client, RetryPolicy(rng=random.Random(7), sleep=clock.sleep))
    before = _sample("nodeflow_cloud_api_retries_total", operation="terminate_instances")
    assert gateway.terminate(["i-1"])[0]["InstanceId"] == "i-1"
    assert client.calls == 3 and len(clock.slept) == 2
    assert 0 <= clock.slept[0] <= 0.25 and 0 <= clock.slept[1] <= 0.5  # a random wait up to base * 2^n
    assert _sample("nodeflow_cloud_api_retries_total", operation="terminate_instances") - before == 2


def test_throttling_past_the_attempts_raises_the_ec2_error() -> None:
    clock = Clock()
    client = FlakyClient(*["RequestLimitExceeded"] * 5)
    with pytest.raises(ClientError) as err:
        Ec2Gateway(client, RetryPolicy(max_attempts=3, sleep=clock.sleep)).terminate(["i-1"])
    assert classify(err.value) is CloudErrorKind.THROTTLED and client.calls == 3


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(base_seconds=1, cap_seconds=4, rng=random.Random(1))
    assert max(policy.delay(10) for _ in range(200)) <= 4


@pytest.mark.parametrize("code", ["UnauthorizedOperation", "InsufficientInstanceCapacity", "InvalidParameterValue"])
def test_other_errors_are_not_retried(code: str) -> None:
    client = FlakyClient(code)
    with pytest.raises(ClientError):
        Ec2Gateway(client, RetryPolicy(sleep=lambda s: None)).terminate(["i-1"])
    assert client.calls == 1


def test_unauthorized_is_logged_with_the_iam_action_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    before = _sample("nodeflow_cloud_api_errors_total", operation="terminate_instances", kind="unauthorized")
    with caplog.at_level(logging.ERROR, logger="gateways.ec2"), pytest.raises(ClientError):
        Ec2Gateway(FlakyClient("UnauthorizedOperation")).terminate(["i-1"])
    assert any("ec2:TerminateInstances" in r.getMessage() for r in caplog.records)
    assert _sample("nodeflow_cloud_api_errors_total", operation="terminate_instances", kind="unauthorized") == \
        before + 1
    assert iam_action("describe_instance_type_offerings") == "ec2:DescribeInstanceTypeOfferings"


def test_the_rate_limit_covers_every_request_of_a_boto3_client(moto_endpoint: str) -> None:
    """Installed on the client (botocore's before-send), so pages and botocore's own retries take tokens too."""
    import boto3

    clock = Clock()
    bucket = TokenBucket(rate=10, burst=2, clock=clock, sleep=clock.sleep)
    client = limit_call_rate(boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint), bucket)
    for _ in range(4):
        client.describe_availability_zones()
    assert clock.slept == pytest.approx([0.1, 0.1])


def test_botocore_retries_are_counted_whether_the_call_succeeds_or_fails(cloud_endpoint: str) -> None:
    """Throttled answers botocore rides out are counted by operation; a call that never meets one adds nothing."""
    import boto3
    from botocore.config import Config

    from devstack.cloud_faults import FaultRule, clear_faults, set_faults

    client = count_sdk_retries(boto3.client("ec2", region_name="us-east-1", endpoint_url=cloud_endpoint,
                                            config=Config(retries={"max_attempts": 3, "mode": "standard"})))
    before = _sample("nodeflow_cloud_api_sdk_retries_total", operation="DescribeAvailabilityZones")
    try:
        set_faults(cloud_endpoint, [FaultRule("DescribeAvailabilityZones", "RequestLimitExceeded", times=2)])
        client.describe_availability_zones()  # refused twice, answered the third time
        assert _sample("nodeflow_cloud_api_sdk_retries_total", operation="DescribeAvailabilityZones") == before + 2
        client.describe_availability_zones()  # answered at once
        assert _sample("nodeflow_cloud_api_sdk_retries_total", operation="DescribeAvailabilityZones") == before + 2
        set_faults(cloud_endpoint, [FaultRule("DescribeAvailabilityZones", "RequestLimitExceeded")])
        with pytest.raises(ClientError):
            client.describe_availability_zones()  # refused each time: botocore's 3 retries (its max_attempts
        # counts retries, not the first request), then the error
        assert _sample("nodeflow_cloud_api_sdk_retries_total", operation="DescribeAvailabilityZones") == before + 5
    finally:
        clear_faults(cloud_endpoint)
