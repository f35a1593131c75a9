"""The one way to the machines' cloud: every EC2 call about instances the worker makes goes through here.

`CloudProvider` is the seam (Karpenter's `cloudprovider`): what the activities and controllers need of a cloud
(find instances, launch one, terminate some, read images and a launch's network). `Ec2Gateway` is its EC2 side, over
a boto3 client. Each method is one EC2 call (a paginated one reads every page) with the caller's arguments
unchanged: client tokens and which error codes count as done stay with the caller, which knows what a retry means
for its step. The one retry made here is of throttling (`RequestLimitExceeded`), after a jittered backoff: every
caller would do the same, and EC2 asks for exactly that. EC2's errors (botocore's `ClientError`) pass through as
they are; `classify` names their kind (an enum) so callers branch on it, not on text.

The cloud's own failures (docs/reliability.md#the-clouds-own-failures): a `TokenBucket` (gateways/rate_limit.py)
bounds the worker's EC2 call rate (`--ec2-max-calls-per-second`, installed on the client by `limit_call_rate`) so
that a large drift cannot trip account-wide throttling, and an `UnauthorizedOperation` is logged and counted with
the IAM action it needs, never retried here.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar, runtime_checkable

from gateways.rate_limit import TokenBucket
from telemetry import metrics

log = logging.getLogger(__name__)
T = TypeVar("T")

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

    def describe(self, operation: str, params: dict[str, Any]) -> dict[str, Any]: ...


@runtime_checkable
class FleetCloud(Protocol):
    """A cloud that launches as Karpenter's AWS provider does: one CreateFleet over launch templates."""

    def ensure_launch_template(self, name: str, data: dict[str, Any], tags: dict[str, str]) -> bool: ...

    def create_fleet(self, params: dict[str, Any]) -> dict[str, Any]: ...

    def launch_templates(self, filters: Sequence[Filter]) -> list[dict[str, Any]]: ...

    def delete_launch_template(self, template_id: str) -> bool: ...


class CloudErrorKind(StrEnum):
    """What an EC2 error means for the caller (metric label values, so they never change)."""

    THROTTLED = "throttled"  # slow down and try again: the gateway does
    INSUFFICIENT_CAPACITY = "insufficient_capacity"  # this offering, now: the launch takes the next one
    UNAUTHORIZED = "unauthorized"  # credentials or policy: no retry fixes it until an operator acts
    NOT_FOUND = "not_found"  # the instance is gone: done, for a termination
    OTHER = "other"


THROTTLING_CODES = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException"})
CAPACITY_CODES = frozenset({"InsufficientInstanceCapacity", "UnfulfillableCapacity", "Unsupported"})
UNAUTHORIZED_CODES = frozenset({"UnauthorizedOperation", "AuthFailure", "AccessDenied", "AccessDeniedException"})
NOT_FOUND_CODES = frozenset({"InvalidInstanceID.NotFound"})
TEMPLATE_MISSING = frozenset({"InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound"})
TEMPLATE_EXISTS = "InvalidLaunchTemplateName.AlreadyExistsException"


def error_code(exc: BaseException) -> str | None:
    """The EC2 error code of a botocore `ClientError` (or anything shaped like one), else None."""
    response = getattr(exc, "response", None)
    return ((response or {}).get("Error") or {}).get("Code") if isinstance(response, dict) else None


KINDS: dict[str, CloudErrorKind] = {
    **dict.fromkeys(THROTTLING_CODES, CloudErrorKind.THROTTLED),
    **dict.fromkeys(CAPACITY_CODES, CloudErrorKind.INSUFFICIENT_CAPACITY),
    **dict.fromkeys(UNAUTHORIZED_CODES, CloudErrorKind.UNAUTHORIZED),
    **dict.fromkeys(NOT_FOUND_CODES, CloudErrorKind.NOT_FOUND),
}


def classify(exc: BaseException) -> CloudErrorKind:
    """The kind of an EC2 error, by its code (never its message); OTHER for anything else."""
    return KINDS.get(error_code(exc) or "", CloudErrorKind.OTHER)


def iam_action(operation: str) -> str:
    """The IAM action a boto3 operation needs: `run_instances` -> `ec2:RunInstances`."""
    return "ec2:" + "".join(part.capitalize() for part in operation.split("_"))


def limit_call_rate(client: Any, bucket: TokenBucket) -> Any:
    """Make every HTTP request of a boto3 client (each page, each of botocore's own retries) take a token of
    `bucket` first. Returns the client."""
    def take(**_: Any) -> None:  # None: botocore sends the request itself (an answer here would replace it)
        waited = bucket.acquire()
        if waited > 0:
            metrics.CLOUD_RATE_LIMIT_WAIT.inc(waited)

    client.meta.events.register("before-send.ec2", take)
    return client


def count_sdk_retries(client: Any) -> Any:
    """Count the requests botocore's retry mode sent again for each call of a boto3 client (its
    `ResponseMetadata.RetryAttempts`, answered or refused): a throttled call botocore rode out is invisible to the
    gateway's own counters. Returns the client."""
    def after_call(parsed: Any = None, model: Any = None, **_: Any) -> None:
        tries = ((parsed or {}).get("ResponseMetadata") or {}).get("RetryAttempts") or 0
        if tries and model is not None:
            metrics.CLOUD_SDK_RETRIES.labels(operation=model.name).inc(tries)

    client.meta.events.register("after-call.ec2", after_call)
    return client


@dataclass
class RetryPolicy:
    """Retries of a throttled call: full jitter (a random wait up to base * 2^n, capped), so that many workers
    throttled at once do not come back in step. botocore's standard mode has retried already by then."""

    max_attempts: int = 4
    base_seconds: float = 0.25
    cap_seconds: float = 8.0
    rng: random.Random = field(default_factory=random.Random)
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int) -> float:
        return self.rng.uniform(0.0, min(self.cap_seconds, self.base_seconds * 2 ** attempt))


class Ec2Gateway:
    """`CloudProvider` over a boto3 EC2 client (or anything with its methods: moto, a test's counting wrapper)."""

    def __init__(self, client: Any, retry: RetryPolicy | None = None) -> None:
        self.client = client
        self.retry = retry or RetryPolicy()

    def _call(self, operation: str, fn: Callable[[], T]) -> T:
        """`fn` (one EC2 operation), tried again after a jittered backoff while EC2 throttles it; every failure
        counted by kind; UnauthorizedOperation logged with the IAM action it needs."""
        for attempt in range(self.retry.max_attempts):
            try:
                return fn()
            except Exception as exc:
                kind = classify(exc)
                if error_code(exc) is None:
                    raise
                metrics.CLOUD_API_ERRORS.labels(operation=operation, kind=kind.value).inc()
                if kind is CloudErrorKind.UNAUTHORIZED:
                    log.error("EC2 refused %s: %s; the worker's credentials need IAM action %s", operation,
                              error_code(exc), iam_action(operation),
                              extra={"iam_action": iam_action(operation), "error_code": error_code(exc)})
                if kind is not CloudErrorKind.THROTTLED or attempt + 1 >= self.retry.max_attempts:
                    raise
                metrics.CLOUD_API_RETRIES.labels(operation=operation).inc()
                self.retry.sleep(self.retry.delay(attempt))
        raise AssertionError("unreachable")

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
        return _flatten(self._call("describe_instances", lambda: self.client.describe_instances(**params)))

    def all_instances(self, filters: Sequence[Filter]) -> list[Instance]:
        """DescribeInstances by filters, every page (read again from the start when EC2 throttles one)."""
        def read() -> list[Instance]:
            pages = self.client.get_paginator("describe_instances").paginate(Filters=list(filters))
            return [inst for page in pages for inst in _flatten(page)]
        return self._call("describe_instances", read)

    def launch(self, params: dict[str, Any]) -> Instance:
        """RunInstances of one instance (the caller sets MinCount/MaxCount and the idempotent ClientToken)."""
        return self._call("run_instances", lambda: self.client.run_instances(**params))["Instances"][0]

    def create_fleet(self, params: dict[str, Any]) -> dict[str, Any]:
        """CreateFleet (the caller sets Type instant and the idempotent ClientToken): the answer as EC2 gives it,
        instances and per-override errors both."""
        return self._call("create_fleet", lambda: self.client.create_fleet(**params))

    def ensure_launch_template(self, name: str, data: dict[str, Any], tags: dict[str, str]) -> bool:
        """The launch template `name` exists (its name derives from its data, so one found is the one wanted):
        DescribeLaunchTemplates, CreateLaunchTemplate when missing; another worker creating it first is fine.
        True when this call created it."""
        try:
            self._call("describe_launch_templates",
                       lambda: self.client.describe_launch_templates(LaunchTemplateNames=[name]))
            return False
        except Exception as exc:
            if error_code(exc) not in TEMPLATE_MISSING:
                raise
        spec = [{"ResourceType": "launch-template", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
        try:
            self._call("create_launch_template", lambda: self.client.create_launch_template(
                LaunchTemplateName=name, LaunchTemplateData=data, TagSpecifications=spec))
        except Exception as exc:
            if error_code(exc) != TEMPLATE_EXISTS:
                raise
            return False
        return True

    def launch_templates(self, filters: Sequence[Filter]) -> list[dict[str, Any]]:
        """DescribeLaunchTemplates by filters, every page (200 a page, EC2's most)."""
        out: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"Filters": list(filters), "MaxResults": 200}
            if token:
                params["NextToken"] = token
            page = self._call("describe_launch_templates",
                              lambda p=params: self.client.describe_launch_templates(**p))  # type: ignore[misc]
            out += page.get("LaunchTemplates") or []
            token = page.get("NextToken")
            if not token:
                return out

    def delete_launch_template(self, template_id: str) -> bool:
        """DeleteLaunchTemplate by id; False when it was gone already (deleting again is done, not an error)."""
        try:
            self._call("delete_launch_template",
                       lambda: self.client.delete_launch_template(LaunchTemplateId=template_id))
        except Exception as exc:
            if error_code(exc) not in TEMPLATE_MISSING:
                raise
            return False
        return True

    def terminate(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """TerminateInstances: the state changes EC2 reports (TerminatingInstances)."""
        return self._call("terminate_instances", lambda: self.client.terminate_instances(
            InstanceIds=list(ids))).get("TerminatingInstances") or []

    def describe(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """One page of a Describe* call a launch's network and image resolution needs (subnets, security groups,
        images, by NextToken): the answer as EC2 gives it."""
        if not operation.startswith("describe_"):
            raise ValueError(f"not a Describe call: {operation}")
        return self._call(operation, lambda: getattr(self.client, operation)(**params))


def _flatten(resp: dict[str, Any]) -> list[Instance]:
    return [inst for res in resp.get("Reservations") or [] for inst in res.get("Instances") or []]


def cloud_provider(ec2: Any) -> CloudProvider:
    """The provider a constructor was handed: a CloudProvider as it is, anything else (a boto3 client, moto's, a
    test's wrapper of one) as an Ec2Gateway over it, so tools and tests may hand in a plain client."""
    return ec2 if isinstance(ec2, CloudProvider) else Ec2Gateway(ec2)
