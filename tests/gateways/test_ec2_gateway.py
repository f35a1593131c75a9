"""The cloud-provider seam: a second cloud plugs into the activities through `CloudProvider`, and the EC2 side
sends EC2 exactly what its callers asked (the shape recorded calls and moto answers depend on)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.testing import ActivityEnvironment

from activities.cloud import CloudActivities
from contracts.termination import InstanceInput
from gateways.ec2 import CloudProvider, Ec2Gateway, cloud_provider


class RecordingEc2:
    """A boto3-shaped EC2 client that records each call and answers one running instance."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def describe_instances(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("describe_instances", kw))
        return {"Reservations": [{"Instances": [{"InstanceId": "i-1", "State": {"Name": "running"}}]},
                                 {"Instances": [{"InstanceId": "i-2", "State": {"Name": "pending"}}]}]}

    def terminate_instances(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("terminate_instances", kw))
        return {"TerminatingInstances": [{"InstanceId": i, "CurrentState": {"Name": "shutting-down"}}
                                         for i in kw["InstanceIds"]]}


class OtherCloud:
    """Another cloud's provider: no boto3 names at all. Its machines stop at once."""

    region = "elsewhere-1"

    def __init__(self) -> None:
        self.state = {"i-7": "running"}
        self.terminated: list[str] = []

    def instances(self, *, ids: Sequence[str] | None = None, filters: Sequence[Any] | None = None
                  ) -> list[dict[str, Any]]:
        return [{"InstanceId": i, "State": {"Name": self.state[i]}} for i in ids or () if i in self.state]

    def all_instances(self, filters: Sequence[Any]) -> list[dict[str, Any]]:
        return []

    def launch(self, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def terminate(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        self.terminated += ids
        self.state.update(dict.fromkeys(ids, "terminated"))
        return [{"InstanceId": i, "CurrentState": {"Name": "terminated"}} for i in ids]

    def describe(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}


def test_a_boto_client_is_wrapped_and_a_provider_is_taken_as_it_is() -> None:
    raw, other = RecordingEc2(), OtherCloud()
    assert isinstance(other, CloudProvider) and not isinstance(raw, CloudProvider)
    assert cloud_provider(other) is other
    wrapped = cloud_provider(raw)
    assert isinstance(wrapped, Ec2Gateway) and wrapped.client is raw


def test_describe_sends_only_what_the_caller_gave_and_flattens_reservations() -> None:
    raw = RecordingEc2()
    gateway = Ec2Gateway(raw)
    by_id = gateway.instances(ids=["i-1"])
    gateway.instances(filters=[{"Name": "tag:x", "Values": ["y"]}])
    assert [i["InstanceId"] for i in by_id] == ["i-1", "i-2"]
    assert raw.calls == [("describe_instances", {"InstanceIds": ["i-1"]}),
                         ("describe_instances", {"Filters": [{"Name": "tag:x", "Values": ["y"]}]})]
    assert gateway.terminate(["i-1"])[0]["CurrentState"]["Name"] == "shutting-down"
    assert raw.calls[-1] == ("terminate_instances", {"InstanceIds": ["i-1"]})


async def test_the_termination_activity_runs_on_another_cloud() -> None:
    """The seam is real: the activity reaches the machine through the provider it was handed, not EC2's API
    (the providerID is still read as EC2's: api/provider_id.py)."""
    other = OtherCloud()
    acts = CloudActivities(other, poll=0.01)
    result = await ActivityEnvironment().run(acts.terminate_instance,
                                             InstanceInput(provider_id="aws:///zone-a/i-7", node_name="n1"))
    assert other.terminated == ["i-7"]
    assert result.terminate_called and result.state == "terminated"
