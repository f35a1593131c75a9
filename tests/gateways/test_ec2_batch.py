"""One-instance TerminateInstances and DescribeInstances merged per window (gateways/ec2_batch.py), through boto3
against moto_server: callers at once make one call, each gets its own instance's answer, and an unknown id fails
only its own caller. The window itself (idle, max age, full) with a fake executor and an injected clock."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from gateways.ec2 import Ec2Gateway
from gateways.ec2_batch import BatchedCloud, IdBatcher, Window

UNKNOWN = "i-0123456789abcdef0"


class Counting(Ec2Gateway):
    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.terminated: list[list[str]] = []
        self.described: list[list[str]] = []

    def terminate(self, ids: Any) -> list[dict[str, Any]]:
        self.terminated.append(list(ids))
        return super().terminate(ids)

    def instances(self, *, ids: Any = None, filters: Any = None) -> list[dict[str, Any]]:
        self.described.append(list(ids or ()))
        return super().instances(ids=ids, filters=filters)


@pytest.fixture
def ec2(moto_endpoint: str) -> Any:
    return boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint)


def _launch(ec2: Any, n: int) -> list[str]:
    image = ec2.describe_images()["Images"][0]["ImageId"]
    out = ec2.run_instances(ImageId=image, MinCount=n, MaxCount=n, InstanceType="m5.large")
    return [i["InstanceId"] for i in out["Instances"]]


def _at_once(fn: Any, items: list[str]) -> list[Any]:
    """fn(item) for every item from its own thread, all started together; each result or its exception."""
    def call(item: str) -> Any:
        try:
            return fn(item)
        except Exception as exc:
            return exc
    with ThreadPoolExecutor(len(items)) as pool:
        return list(pool.map(call, items))


def test_terminations_at_once_are_one_call_and_each_caller_gets_its_own_instance(ec2: Any) -> None:
    ids = _launch(ec2, 6)
    cloud = Counting(ec2)
    batched = BatchedCloud(cloud, Window(idle_seconds=0.3, max_seconds=2.0))
    results = _at_once(lambda i: batched.terminate([i]), ids)
    assert len(cloud.terminated) == 1 and sorted(cloud.terminated[0]) == sorted(ids)
    assert [[c["InstanceId"] for c in r] for r in results] == [[i] for i in ids]
    assert {r[0]["CurrentState"]["Name"] for r in results} <= {"shutting-down", "terminated"}


def test_an_unknown_id_fails_only_its_own_caller(ec2: Any) -> None:
    ids = [*_launch(ec2, 3), UNKNOWN]
    cloud = Counting(ec2)
    batched = BatchedCloud(cloud, Window(idle_seconds=0.3, max_seconds=2.0))
    described = _at_once(lambda i: batched.instances(ids=[i]), ids)
    assert len(cloud.described[0]) == 4  # one merged call, refused as a whole for the unknown id ...
    assert sorted(map(tuple, cloud.described[1:])) == sorted((i,) for i in ids)  # ... then each alone
    assert [[x["InstanceId"] for x in r] for r in described[:3]] == [[i] for i in ids[:3]]
    assert isinstance(described[3], ClientError)
    assert described[3].response["Error"]["Code"] == "InvalidInstanceID.NotFound"
    terminated = _at_once(lambda i: batched.terminate([i]), ids)
    assert [r[0]["InstanceId"] for r in terminated[:3]] == ids[:3]
    assert isinstance(terminated[3], ClientError)
    assert terminated[3].response["Error"]["Code"] == "InvalidInstanceID.NotFound"


def test_several_ids_or_filters_go_to_the_cloud_as_they_are(ec2: Any) -> None:
    ids = _launch(ec2, 2)
    cloud = Counting(ec2)
    batched = BatchedCloud(cloud)
    assert sorted(i["InstanceId"] for i in batched.instances(ids=ids)) == sorted(ids)
    assert batched.describes.calls == [] and cloud.described == [ids]


def test_a_full_window_closes_at_once_and_the_next_request_opens_another() -> None:
    seen: list[list[str]] = []
    release = threading.Event()

    def execute(ids: list[str]) -> dict[str, Any]:
        seen.append(sorted(ids))
        release.wait(5)
        return {i: i.upper() for i in ids}

    batcher: IdBatcher[str] = IdBatcher(execute, Window(idle_seconds=1.0, max_seconds=5.0, max_items=3))
    with ThreadPoolExecutor(4) as pool:
        futs = [pool.submit(batcher.submit, f"i-{n}") for n in range(3)]
        threading.Event().wait(0.4)  # well within the 1 s idle window: only being full closed it
        assert seen == [["i-0", "i-1", "i-2"]]
        late = pool.submit(batcher.submit, "i-3")  # the next window, closed by its own idle time
        release.set()
        assert [f.result(5) for f in futs] == ["I-0", "I-1", "I-2"]
        assert late.result(5) == "I-3" and seen[1] == ["i-3"]


def test_the_same_id_asked_twice_in_a_window_is_one_id_and_both_get_the_answer() -> None:
    calls: list[list[str]] = []
    batcher: IdBatcher[str] = IdBatcher(lambda ids: calls.append(ids) or {i: "ok" for i in ids},  # type: ignore[func-returns-value]
                                        Window(idle_seconds=0.2, max_seconds=1.0))
    assert _at_once(batcher.submit, ["i-1", "i-1", "i-2"]) == ["ok", "ok", "ok"]
    assert len(calls) == 1 and sorted(calls[0]) == ["i-1", "i-2"]
