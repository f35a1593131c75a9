"""The cloud's own failures, through boto3 against the EC2 stand-in with its fault knob on (devstack/cloud_faults.py).

Throttling on a share of RunInstances and TerminateInstances still launches one instance and terminates it once;
ICE on the cheapest offering marks it unavailable for 3 minutes and the launch (and the next) takes another;
UnauthorizedOperation fails the launch for good with an Event naming the IAM action, and leaves nothing behind.
botocore's own retries are off here (max_attempts 1) so the gateway's are what is tested; its backoff does not
sleep. docs/reliability.md#the-clouds-own-failures.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from support.nodeclass_world import create, node_pool
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.cloud import CloudActivities
from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from api.labels import NODECLAIM_TAG
from contracts.disruption import LaunchInput, Replacement
from contracts.errors import ErrorType
from contracts.termination import InstanceInput
from devstack.cloud_faults import FaultRule, clear_faults, fault_counts, set_faults
from gateways.ec2 import Ec2Gateway, RetryPolicy
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import UnavailableOfferings
from simulator.ec2 import DEFAULT_AMI

ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]


@pytest.fixture
def ec2(cloud_endpoint: str) -> Iterator[Ec2Gateway]:
    """A gateway over a boto3 client without botocore's retries, whose backoff does not sleep; the knob off after."""
    client = boto3.client("ec2", region_name="us-east-1", endpoint_url=cloud_endpoint,
                          config=Config(retries={"max_attempts": 1, "mode": "standard"}))
    before = _running(client)
    yield Ec2Gateway(client, RetryPolicy(max_attempts=10, sleep=lambda s: None))
    clear_faults(cloud_endpoint)
    leftover = sorted(_running(client) - before)
    if leftover:
        client.terminate_instances(InstanceIds=leftover)


def _running(client: Any, claim: str | None = None) -> set[str]:
    filters = [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    if claim:
        filters.append({"Name": f"tag:{NODECLAIM_TAG}", "Values": [claim]})
    resp = client.describe_instances(Filters=filters)
    return {i["InstanceId"] for r in resp["Reservations"] for i in r["Instances"]}


def _launch(acts: ProvisioningActivities, key: str) -> Any:
    inp = LaunchInput(key=key, node_pool="web", reason="Underutilized",
                      replacement=Replacement(instance_types=["m5.large", "m5.xlarge"], capacity_type="on-demand"))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


async def test_throttling_a_third_of_launches_and_terminations_still_does_each_exactly_once(
        kube: KubeClient, ec2: Ec2Gateway, cloud_endpoint: str) -> None:
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI,
                                  offerings=UnavailableOfferings())
    set_faults(cloud_endpoint, [FaultRule("RunInstances", "RequestLimitExceeded", rate=0.3),
                                FaultRule("TerminateInstances", "RequestLimitExceeded", rate=0.3),
                                FaultRule("DescribeInstances", "RequestLimitExceeded", rate=0.3)], seed=3)
    launched = [await _launch(acts, f"disrupt-throttle/1/{i}") for i in range(4)]
    for r in launched:
        assert _running(ec2.client, r.node_claim) == {r.instance_id}  # one instance per claim, none leaked
    cloud = CloudActivities(ec2, poll=0.05)
    for r in launched:
        inp = InstanceInput(provider_id=f"aws:///us-east-1a/{r.instance_id}", node_name=r.node_claim)
        await ActivityEnvironment().run(cloud.terminate_instance, inp)
    counts = fault_counts(cloud_endpoint)
    assert counts["injected"].get("RunInstances", 0) > 0 and counts["injected"].get("TerminateInstances", 0) > 0
    assert counts["calls"]["RunInstances"] - counts["injected"]["RunInstances"] == 4  # one accepted per claim
    assert counts["calls"]["TerminateInstances"] - counts["injected"]["TerminateInstances"] == 4  # no double
    assert not any(_running(ec2.client, r.node_claim) for r in launched)


async def test_ice_from_the_cloud_marks_the_offering_and_the_next_launch_takes_another(
        kube: KubeClient, ec2: Ec2Gateway, cloud_endpoint: str) -> None:
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))
    cache = UnavailableOfferings()
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI, offerings=cache)
    set_faults(cloud_endpoint, [FaultRule("RunInstances", "InsufficientInstanceCapacity",
                                          params={"InstanceType": "m5.large"})])
    first = await _launch(acts, "disrupt-ice/1/0")
    assert first.instance_type == "m5.xlarge"  # every m5.large zone refused, in one activity attempt
    assert all(cache.unavailable("m5.large", z, "on-demand") for z in ("us-east-1a", "us-east-1b", "us-east-1c"))
    refused = fault_counts(cloud_endpoint)["injected"]["RunInstances"]
    second = await _launch(acts, "disrupt-ice/1/1")
    assert second.instance_type == "m5.xlarge"
    assert fault_counts(cloud_endpoint)["injected"]["RunInstances"] == refused  # not asked again within 3 min
    assert _running(ec2.client, first.node_claim) == {first.instance_id}


async def test_unauthorized_fails_the_launch_for_good_naming_the_iam_action(
        kube: KubeClient, ec2: Ec2Gateway, cloud_endpoint: str) -> None:
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI,
                                  offerings=UnavailableOfferings())
    set_faults(cloud_endpoint, [FaultRule("RunInstances", "UnauthorizedOperation")])
    with pytest.raises(ApplicationError) as err:
        await _launch(acts, "disrupt-unauth/1/0")
    assert err.value.type == ErrorType.CLOUD_UNAUTHORIZED.value and err.value.non_retryable
    assert "ec2:RunInstances" in str(err.value)
    assert fault_counts(cloud_endpoint)["injected"]["RunInstances"] == 1  # no retry loop
    assert kube.list_node_claims() == []  # the claim is gone, nothing was launched
    events = [e for e in kube.core.list_event_for_all_namespaces().items if e.reason == "CloudUnauthorized"]
    assert events and "ec2:RunInstances" in events[-1].message and events[-1].type == "Warning"


async def test_unauthorized_termination_says_so_once_and_finishes_when_the_credentials_are_back(
        kube: KubeClient, ec2: Ec2Gateway, cloud_endpoint: str) -> None:
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI,
                                  offerings=UnavailableOfferings())
    launched = await _launch(acts, "disrupt-unauth-term/1/0")
    cloud = CloudActivities(ec2, poll=0.05, kube=kube)
    inp = InstanceInput(provider_id=f"aws:///us-east-1a/{launched.instance_id}", node_name="",
                        node_claim_name=launched.node_claim)
    set_faults(cloud_endpoint, [FaultRule("TerminateInstances", "UnauthorizedOperation")])
    for _ in range(2):  # Temporal's retries: each refused, said once
        with pytest.raises(ApplicationError) as err:
            await ActivityEnvironment().run(cloud.terminate_instance, inp)
        assert err.value.type == ErrorType.CLOUD_UNAUTHORIZED.value and not err.value.non_retryable
        assert "ec2:TerminateInstances" in str(err.value)
    events = [e for e in kube.core.list_event_for_all_namespaces().items
              if e.reason == "CloudUnauthorized" and e.involved_object.name == launched.node_claim]
    assert len(events) == 1 and "ec2:TerminateInstances" in events[0].message
    assert _running(ec2.client, launched.node_claim) == {launched.instance_id}  # not given up on: still there
    set_faults(cloud_endpoint, [])  # the credentials are fixed
    result = await ActivityEnvironment().run(cloud.terminate_instance, inp)
    assert result.terminate_called and fault_counts(cloud_endpoint)["calls"]["TerminateInstances"] == 1
    assert not _running(ec2.client, launched.node_claim)
