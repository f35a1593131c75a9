"""EC2 activity against moto_server: terminate once, idempotent on retry, gone counts as done."""

from __future__ import annotations

import boto3
from temporalio.testing import ActivityEnvironment

from activities.cloud import CloudActivities
from api.provider_id import instance_id_from_provider_id
from contracts.termination import InstanceInput


class CountingEc2:
    """The real boto3 client, counting TerminateInstances calls."""

    def __init__(self, ec2) -> None:
        self._ec2 = ec2
        self.terminations = 0

    def terminate_instances(self, **kw):
        self.terminations += 1
        return self._ec2.terminate_instances(**kw)

    def __getattr__(self, name):
        return getattr(self._ec2, name)


def _launch(ec2) -> str:
    resp = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="m5.large",
                             Placement={"AvailabilityZone": "us-east-1a"})
    return resp["Instances"][0]["InstanceId"]


async def test_terminate_is_idempotent(moto_endpoint: str) -> None:
    ec2 = CountingEc2(boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint))
    iid = _launch(ec2)
    acts = CloudActivities(ec2, poll=0.05)
    env = ActivityEnvironment()
    inp = InstanceInput(provider_id=f"aws:///us-east-1a/{iid}", node_name="n1")
    first = await env.run(acts.terminate_instance, inp)
    assert first.terminate_called and first.state in ("shutting-down", "terminated")
    again = await env.run(acts.terminate_instance, inp)
    assert not again.terminate_called and ec2.terminations == 1
    gone = await env.run(acts.terminate_instance, InstanceInput(provider_id="aws:///us-east-1a/i-0123456789abcdef0"))
    assert gone.state == "gone" and not gone.terminate_called


def test_provider_id_parsing() -> None:
    assert instance_id_from_provider_id("aws:///us-east-1a/i-0abc") == "i-0abc"
    assert instance_id_from_provider_id("kind://docker/kind/node") is None
