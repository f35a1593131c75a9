"""AWS answers' timestamps: the standard library reads ISO 8601 text, botocore's parser the rest, with the same
instants botocore alone gives; a client of the process's session reads EC2's answers through it."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.utils import parse_timestamp as botocore_timestamp

from runtime.cloud_clients import aws_timestamp, ec2_client


@pytest.mark.parametrize("value", ["2026-11-29T16:24:39.000Z", "2026-11-29T16:24:39Z", "2026-11-29T18:24:39+02:00",
                                   "2026-11-29t16:24:39.5z", 1764433479, 1764433479.25, "1764433479",
                                   "Sun, 29 Nov 2026 16:24:39 GMT"])
def test_every_form_gives_the_instant_botocore_gives(value: object) -> None:
    ours, theirs = aws_timestamp(value), botocore_timestamp(value)
    assert ours == theirs and ours.utcoffset() == theirs.utcoffset()


def test_bad_text_is_refused_as_botocore_refuses_it() -> None:
    with pytest.raises(ValueError):
        aws_timestamp("2026-13-45T99:00:00Z-nonsense")


def test_ec2_answers_carry_the_same_launch_times(moto_endpoint: str) -> None:
    plain = boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint)
    image = plain.describe_images()["Images"][0]["ImageId"]
    iid = plain.run_instances(ImageId=image, InstanceType="m5.large", MinCount=1, MaxCount=1)["Instances"][0][
        "InstanceId"]
    try:
        ours = ec2_client("us-east-1", moto_endpoint).describe_instances(InstanceIds=[iid])
        theirs = plain.describe_instances(InstanceIds=[iid])
        launched = ours["Reservations"][0]["Instances"][0]["LaunchTime"]
        assert launched == theirs["Reservations"][0]["Instances"][0]["LaunchTime"]
        assert launched.tzinfo is not None and launched <= datetime.now(UTC)
    finally:
        plain.terminate_instances(InstanceIds=[iid])
