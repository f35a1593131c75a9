"""Both EC2 stand-ins answer RunInstances' ClientToken as EC2 does (devstack/moto_run_token.py): a repeat, also one
sent while the first is still answering, gets the first reservation and launches nothing; the token with other
parameters is refused; requests without a token launch each time."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

IMAGE = "ami-12c6146b"  # in moto's bundled image list


@pytest.fixture(params=["moto_endpoint", "cloud_endpoint"])
def ec2(request: pytest.FixtureRequest) -> Any:
    """The tests' shared moto and the devstack's stand-in."""
    return boto3.client("ec2", region_name="us-east-1", endpoint_url=request.getfixturevalue(request.param))


def _run(ec2: Any, token: str | None, itype: str = "t3.medium", tag: str = "") -> dict[str, Any]:
    tags = [{"ResourceType": "instance", "Tags": [{"Key": "test", "Value": tag or str(token)}]}]
    extra = {"ClientToken": token} if token else {}
    return ec2.run_instances(ImageId=IMAGE, InstanceType=itype, MinCount=1, MaxCount=1, TagSpecifications=tags,
                             **extra)


def _tagged(ec2: Any, value: str) -> list[str]:
    pages = ec2.describe_instances(Filters=[{"Name": "tag:test", "Values": [value]}])["Reservations"]
    return [i["InstanceId"] for r in pages for i in r["Instances"]]


def test_a_repeated_token_gets_the_first_reservation(ec2: Any) -> None:
    token = f"nodeflow-{uuid.uuid4()}"
    first, again = _run(ec2, token), _run(ec2, token)
    assert again["ReservationId"] == first["ReservationId"]
    assert [i["InstanceId"] for i in again["Instances"]] == [i["InstanceId"] for i in first["Instances"]]
    assert _tagged(ec2, token) == [first["Instances"][0]["InstanceId"]]


def test_repeats_sent_at_once_make_one_instance(ec2: Any) -> None:
    token = f"nodeflow-{uuid.uuid4()}"
    with ThreadPoolExecutor(4) as pool:  # a retried launch attempt while the first is still in flight
        answers = list(pool.map(lambda _: _run(ec2, token), range(4)))
    assert len({a["Instances"][0]["InstanceId"] for a in answers}) == 1
    assert len(_tagged(ec2, token)) == 1


def test_the_token_with_other_parameters_is_refused_and_no_token_launches_each_time(ec2: Any) -> None:
    token = f"nodeflow-{uuid.uuid4()}"
    _run(ec2, token)
    with pytest.raises(ClientError) as refused:
        _run(ec2, token, itype="m5.large")
    assert refused.value.response["Error"]["Code"] == "IdempotentParameterMismatch"
    assert len(_tagged(ec2, token)) == 1
    plain = f"plain-{uuid.uuid4()}"
    _run(ec2, None, tag=plain), _run(ec2, None, tag=plain)
    assert len(_tagged(ec2, plain)) == 2


def test_a_token_being_answered_holds_up_no_other_token() -> None:
    """EC2 serializes one token's requests, not every launch: while the first call of token a is still being
    answered, a launch with token b is answered."""
    import importlib
    import threading
    from types import SimpleNamespace

    for name in ("moto.core.responses", "moto.ec2.exceptions"):  # before the timed calls: seconds when loaded
        importlib.import_module(name)
    from devstack import moto_run_token

    release, b_done = threading.Event(), threading.Event()

    def original(self: Any) -> Any:
        if self.token == "a":
            assert release.wait(20), "token a was held too long"
        return SimpleNamespace(result=SimpleNamespace(id=f"r-{self.token}"))

    def call(token: str) -> Any:
        self = SimpleNamespace(token=token, current_account="1", region="us-east-1", querystring={"ClientToken": token},
                               ec2_backend=SimpleNamespace(reservations={}), _get_param=lambda _name: token)
        return moto_run_token._idempotent(original)(self)

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(call, "a")  # blocks until released
        second = pool.submit(lambda: (call(f"b{uuid.uuid4()}"), b_done.set()))
        assert b_done.wait(10), "token b waited for token a"
        release.set()
        assert first.result(20).result.id == "r-a" and second.result(20)
