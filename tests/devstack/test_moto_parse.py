"""The stand-ins' query parsing (`devstack.moto_parse`) gives moto's own parse of every request, faster."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from devstack import moto_parse

AMI = "ami-0a1b2c3d4e5f60718"


def _fleet(overrides: int) -> dict[str, Any]:
    """A CreateFleet as nodeflow sends it: one template, an override per type and subnet, tags on three kinds."""
    return {
        "Type": "instant", "ClientToken": "nodeflow-claim-1",
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"},
        "SpotOptions": {"AllocationStrategy": "price-capacity-optimized"},
        "LaunchTemplateConfigs": [{
            "LaunchTemplateSpecification": {"LaunchTemplateName": "nodeflow-default", "Version": "$Latest"},
            "Overrides": [{"InstanceType": f"m5.{i}xlarge", "SubnetId": f"subnet-{i % 3}", "Priority": float(i),
                           "AvailabilityZone": f"us-east-1{'abc'[i % 3]}", "ImageId": AMI}
                          for i in range(overrides)]}],
        "TagSpecifications": [{"ResourceType": kind, "Tags": [{"Key": f"k{j}", "Value": "v"} for j in range(8)]}
                              for kind in ("instance", "volume", "fleet")]}


REQUESTS: dict[str, dict[str, Any]] = {
    "CreateFleet": _fleet(60),
    "DescribeInstances": {"InstanceIds": [f"i-{n:017x}" for n in range(200)],
                          "Filters": [{"Name": "tag:karpenter.sh/nodepool", "Values": ["default", "spot"]},
                                      {"Name": "instance-state-name", "Values": ["pending", "running"]}]},
    "DescribeInstanceStatus": {"IncludeAllInstances": True, "MaxResults": 1000,
                               "Filters": [{"Name": "instance-state-name", "Values": ["running"]}]},
    "RunInstances": {"ImageId": AMI, "MinCount": 1, "MaxCount": 1, "InstanceType": "m5.large",
                     "BlockDeviceMappings": [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 20}}],
                     "MetadataOptions": {"HttpTokens": "required"}},
    "TerminateInstances": {"InstanceIds": ["i-0123456789abcdef0"]},
    "DescribeLaunchTemplates": {"LaunchTemplateNames": ["nodeflow-default"]},
}


def _parse(operation: str, params: dict[str, Any]) -> Any:
    """moto's own parse of the request botocore would send for `params`, through werkzeug as moto_server reads it."""
    import botocore.session
    from botocore.serialize import create_serializer
    from moto.core.parse import EC2QueryParser
    from werkzeug.test import EnvironBuilder
    from werkzeug.wrappers import Request

    model = botocore.session.get_session().get_service_model("ec2").operation_model(operation)
    body = create_serializer("ec2").serialize_to_request(params, model)["body"]
    request = Request(EnvironBuilder(method="POST", data=body).get_environ())
    return EC2QueryParser(model).parse({"values": request.values, "method": "POST", "headers": {}, "body": b"",
                                        "url_path": "/", "url_params": {}})


@pytest.fixture
def patched() -> Iterator[None]:
    """The patch for one test, moto's parser restored after it."""
    from moto.core.parse import QueryParser

    before = QueryParser._do_parse, QueryParser._gonna_recurse
    moto_parse.install()
    moto_parse.install()  # idempotent: the second install wraps moto's functions, not the first patch
    try:
        yield
    finally:
        QueryParser._do_parse, QueryParser._gonna_recurse = before  # type: ignore[method-assign]


def _as_shipped() -> None:
    """Inside a patched test: moto's own parser again, for the comparison (the fixture restores it after)."""
    from moto.core.parse import QueryParser

    QueryParser._do_parse = QueryParser._do_parse.__wrapped_keys__  # type: ignore[attr-defined,method-assign]
    QueryParser._gonna_recurse = QueryParser._gonna_recurse.__wrapped_keys__  # type: ignore[attr-defined,method-assign]


def test_any_starts_with_agrees_with_a_scan_of_every_key() -> None:
    rng = random.Random(7)
    for _ in range(300):
        keys = [".".join(rng.choice(["A", "Ab", "B", "1", "10", "2"]) for _ in range(rng.randint(1, 4)))
                for _ in range(rng.randint(0, 12))]
        prefix = ".".join(rng.choice(["A", "Ab", "B", "1", "10", "2", ""]) for _ in range(rng.randint(1, 3)))
        assert moto_parse.any_starts_with(moto_parse.sorted_keys(keys), prefix) == any(
            k.startswith(prefix) for k in keys), (keys, prefix)


@pytest.mark.parametrize("operation", sorted(REQUESTS))
def test_a_request_parses_to_what_moto_as_shipped_parses(operation: str, patched: None) -> None:
    ours = _parse(operation, REQUESTS[operation])
    _as_shipped()
    assert ours == _parse(operation, REQUESTS[operation])
    assert ours  # the request parsed to something: an empty parse on both sides would prove nothing


def test_a_fleet_of_60_overrides_reads_its_parameters_once(patched: None) -> None:
    """What the patch removes: moto iterates every parameter once per structure it considers (~600 times for this
    request, ~20 ms of CPU); patched, the keys are read once and each question is a bisection (~3 ms)."""
    from moto.core.parse import QueryParser

    def iterations() -> int:
        seen = [0]
        original = QueryParser._do_parse

        def counting(self: Any, request_dict: dict[str, Any], shape: Any) -> Any:
            values = request_dict["values"]

            class Counted(type(values)):  # type: ignore[misc]
                def __iter__(self) -> Any:
                    seen[0] += 1
                    return super().__iter__()

            return original(self, {**request_dict, "values": Counted(values.dicts)}, shape)

        QueryParser._do_parse = counting  # type: ignore[method-assign]
        try:
            _parse("CreateFleet", REQUESTS["CreateFleet"])
        finally:
            QueryParser._do_parse = original  # type: ignore[method-assign]
        return seen[0]

    assert iterations() == 1
    _as_shipped()
    assert iterations() > 300
