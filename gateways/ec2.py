"""The one way to the machines' cloud: every EC2 call about instances the worker makes goes through here.

`CloudProvider` is the seam (Karpenter's `cloudprovider`): what the activities and controllers need of a cloud
(find instances, launch one, terminate some, read images and a launch's network). `Ec2Gateway` is its EC2 side, over
a boto3 client. Each method is one EC2 call (a paginated one reads every page) with the caller's arguments
unchanged: retries, backoff, client tokens and which error codes count as done stay with the caller, which knows
what a retry means for its step. EC2's errors (botocore's `ClientError`) pass through as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

Instance = dict[str, Any]  # one EC2 Instance as DescribeInstances / RunInstances return it
Filter = dict[str, Any]  # {"Name": ..., "Values": [...]}


@runtime_checkable
class CloudProvider(Protocol):
    """What nodeflow asks of a cloud. A second cloud implements these; the names differ from boto3's operations
    so a raw client is never mistaken for a provider (see `cloud_provider`)."""

    @property
    def region(self) -> str | None: ...

    def instances(self, *, ids: Sequence[str] | None = None, filters: Sequence[Filter] | None = None
                  ) -> list[Instance]: ...

    def all_instances(self, filters: Sequence[Filter]) -> list[Instance]: ...

    def launch(self, params: dict[str, Any]) -> Instance: ...

    def terminate(self, ids: Sequence[str]) -> list[dict[str, Any]]: ...

    def images(self, **params: Any) -> list[dict[str, Any]]: ...

    def describe(self, operation: str, params: dict[str, Any]) -> dict[str, Any]: ...


class Ec2Gateway:
    """`CloudProvider` over a boto3 EC2 client (or anything with its methods: moto, a test's counting wrapper)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    @property
    def region(self) -> str | None:
        return getattr(getattr(self.client, "meta", None), "region_name", None)

    def instances(self, *, ids: Sequence[str] | None = None, filters: Sequence[Filter] | None = None
                  ) -> list[Instance]:
        """One DescribeInstances call, by ids or by filters (only what is given is sent), reservations flattened."""
        params: dict[str, Any] = {}
        if ids is not None:
            params["InstanceIds"] = list(ids)
        if filters is not None:
            params["Filters"] = list(filters)
        return _flatten(self.client.describe_instances(**params))

    def all_instances(self, filters: Sequence[Filter]) -> list[Instance]:
        """DescribeInstances by filters, every page."""
        pages = self.client.get_paginator("describe_instances").paginate(Filters=list(filters))
        return [inst for page in pages for inst in _flatten(page)]

    def launch(self, params: dict[str, Any]) -> Instance:
        """RunInstances of one instance (the caller sets MinCount/MaxCount and the idempotent ClientToken)."""
        return self.client.run_instances(**params)["Instances"][0]

    def terminate(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """TerminateInstances: the state changes EC2 reports (TerminatingInstances)."""
        return self.client.terminate_instances(InstanceIds=list(ids)).get("TerminatingInstances") or []

    def images(self, **params: Any) -> list[dict[str, Any]]:
        """DescribeImages with the caller's filters (owners, ids)."""
        return self.client.describe_images(**params).get("Images", [])

    def describe(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """One page of a Describe* call a launch's network and image resolution needs (subnets, security groups,
        images, by NextToken): the answer as EC2 gives it."""
        if not operation.startswith("describe_"):
            raise ValueError(f"not a Describe call: {operation}")
        return getattr(self.client, operation)(**params)


def _flatten(resp: dict[str, Any]) -> list[Instance]:
    return [inst for res in resp.get("Reservations") or [] for inst in res.get("Instances") or []]


def cloud_provider(ec2: Any) -> CloudProvider:
    """The provider a constructor was handed: a CloudProvider as it is, anything else (a boto3 client, moto's, a
    test's wrapper of one) as an Ec2Gateway over it, so tools and tests may hand in a plain client."""
    return ec2 if isinstance(ec2, CloudProvider) else Ec2Gateway(ec2)
