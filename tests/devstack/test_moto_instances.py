"""The stand-ins' instance lookups (`devstack.moto_instances`) answer what moto's own do, without copies."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack import moto_instances

AMI = "ami-0a1b2c3d4e5f60718"


@pytest.fixture(scope="module")
def backend() -> Iterator[Any]:
    """moto in this process with 33 instances in 12 reservations, three tag values, one terminated, one stopped."""
    from moto import mock_aws
    from moto.ec2.models import ec2_backends

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="eu-west-3", aws_access_key_id="testing",
                           aws_secret_access_key="testing")
        ids: list[str] = []
        for n in range(12):
            tags = [{"ResourceType": "instance", "Tags": [{"Key": "karpenter.sh/nodepool", "Value": f"pool-{n % 3}"}]}]
            answer = ec2.run_instances(ImageId=AMI, MinCount=1 + n % 5, MaxCount=1 + n % 5, InstanceType="m5.large",
                                       TagSpecifications=tags)
            ids += [i["InstanceId"] for i in answer["Instances"]]
        ec2.terminate_instances(InstanceIds=[ids[3]])
        ec2.stop_instances(InstanceIds=[ids[7]])
        yield ec2_backends["123456789012"]["eu-west-3"]


@pytest.fixture
def patched() -> Iterator[None]:
    from moto.ec2.models.instances import InstanceBackend

    before = {name: getattr(InstanceBackend, name) for name in moto_instances.PATCHES}
    moto_instances.install()
    moto_instances.install()  # idempotent: wraps moto's functions, not the first patch
    try:
        yield
    finally:
        for name, fn in before.items():
            setattr(InstanceBackend, name, fn)


def _moto(name: str) -> Any:
    from moto.ec2.models.instances import InstanceBackend

    return getattr(InstanceBackend, name).__wrapped_copies__


def _shape(reservations: list[Any]) -> list[tuple[str, list[str]]]:
    return [(r.id, [i.id for i in r.instances]) for r in reservations]


FILTERS: list[dict[str, list[str]] | None] = [
    None, {}, {"tag:karpenter.sh/nodepool": ["pool-1"]}, {"instance-state-name": ["running"]},
    {"tag:karpenter.sh/nodepool": ["pool-0", "pool-2"], "instance-state-name": ["stopped", "terminated"]},
    {"tag:karpenter.sh/nodepool": ["none"]}, {"tag:karpenter.sh/nodepool": ["pool-"]},
    {"tag:karpenter.sh/nodepool": ["pool-?"], "instance-state-name": ["running"]}, {"tag:absent": ["pool-1"]},
]


@pytest.mark.parametrize("filters", FILTERS)
def test_filtered_reservations_are_moto_s_and_leave_its_own_whole(backend: Any, patched: None,
                                                                  filters: dict[str, list[str]] | None) -> None:
    whole = _shape(list(backend.reservations.values()))
    ours = backend.all_reservations(filters)
    assert _shape(ours) == _shape(_moto("all_reservations")(backend, filters))
    assert all(r is not kept for r in ours for kept in backend.reservations.values())  # copies, as moto's
    assert _shape(list(backend.reservations.values())) == whole
    if filters:
        assert len(_shape(ours)) < len(whole) or "pool-?" in str(filters) or filters == {
            "instance-state-name": ["running"]}


def test_only_tag_filters_without_a_pattern_are_decided_by_equality() -> None:
    assert moto_instances.literal_tag_filters(
        {"tag:a": ["x", "y"], "tag:b": ["x*"], "tag:c": ["[x]"], "tag-key": ["a"], "instance-state-name": ["running"],
         "tag:d": ["x", "y?"]}) == {"a": frozenset({"x", "y"})}


def test_lookups_by_id_find_moto_s_instances(backend: Any, patched: None) -> None:
    from moto.ec2.exceptions import InvalidInstanceIdError

    every = [i for r in backend.reservations.values() for i in r.instances]
    assert len(every) == 33
    for instance in every:
        assert backend.get_instance(instance.id) is instance is _moto("get_instance")(backend, instance.id)
        assert backend.get_instance_by_id(instance.id) is instance
    assert backend.get_instance_by_id("i-00000000000000000") is None
    with pytest.raises(InvalidInstanceIdError):
        backend.get_instance("i-00000000000000000")


@pytest.mark.parametrize("filters", [None, [{"name": "instance-state-name", "values": ["running"]}],
                                     [{"name": "instance-state-code", "values": ["80"]}]])
def test_all_instances_are_moto_s(backend: Any, patched: None, filters: Any) -> None:
    ours = backend.all_instances(copy.deepcopy(filters))
    assert [i.id for i in ours] == [i.id for i in _moto("all_instances")(backend, copy.deepcopy(filters))]
    assert ours
