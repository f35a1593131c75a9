"""The process's clients of Kubernetes, EC2, SQS, SSM and IAM, configured once (pools sized for the activities).

Every AWS client takes the one region `resolve_region` settled at startup (`--region`,
docs/configuration.md#aws-ec2-and-the-interruption-queue): a client built without one reads only
`AWS_DEFAULT_REGION`, so on a cluster that sets `AWS_REGION` (as EKS Pod Identity and IRSA do) it failed with
"You must specify a region".
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateways.ec2 import count_sdk_retries, limit_call_rate
from gateways.rate_limit import TokenBucket

REGION_SOURCES = ("--region", "AWS_REGION", "AWS_DEFAULT_REGION")


def aws_timestamp(value: Any) -> datetime:
    """A timestamp in an AWS answer. ISO 8601 text (EC2's `2026-11-29T16:24:39.000Z`) is read by the standard library;
    anything else (epoch numbers, RFC 822) by botocore's own parser, which goes through dateutil for text: 24.7 us a
    timestamp against 0.15 us, and a DescribeInstances of 500 instances or an hour of spot prices holds thousands."""
    if isinstance(value, str) and len(value) > 10 and value[4] == "-" and value[10] in "Tt":
        try:
            return datetime.fromisoformat(value)  # keeps the offset (and naivety) as botocore's parser does
        except ValueError:
            pass
    from botocore.utils import parse_timestamp as botocore_timestamp

    return botocore_timestamp(value)


@functools.cache
def _session() -> Any:
    """One boto3 session for the process's clients, its answers' timestamps read by `aws_timestamp`."""
    import boto3
    import botocore.session

    core = botocore.session.get_session()
    core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=aws_timestamp)
    return boto3.session.Session(botocore_session=core)


class RegionNotConfigured(ValueError):
    """No region from the flag or the environment: the worker refuses to start rather than guess one."""


def resolve_region(flag: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The `--region` flag, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, the order of the AWS SDKs."""
    env = os.environ if environ is None else environ
    for value in (flag, env.get("AWS_REGION"), env.get("AWS_DEFAULT_REGION")):
        if value and value.strip():
            return value.strip()
    raise RegionNotConfigured(f"no AWS region: set {', '.join(REGION_SOURCES[:-1])} or {REGION_SOURCES[-1]}")


@dataclass(frozen=True)
class AwsClients:
    """The worker's AWS clients, all in one region."""

    region: str
    ec2: Any
    sqs: Any
    ssm: Any
    iam: Any


@dataclass(frozen=True)
class Ec2CallRate:
    """The worker's EC2 request rate (`--ec2-max-calls-per-second`, `--ec2-call-burst`): EC2 throttles each action
    category on its own bucket (about 100 refilled at 20 a second for describes); the worker's calls spread over
    describe, run, terminate and tag, so 50 a second in all with a burst of 100 keeps a large drift's calls inside
    those buckets without pacing an ordinary one (a one-call-per-instance termination of 1,000 nodes is ~2,000
    calls: 40 s at 50 a second, 100 s at 20). <= 0: unlimited."""

    per_second: float = 50.0
    burst: float = 100.0


def aws_clients(region: str, *, ec2_endpoint: str | None = None, sqs_endpoint: str | None = None,
                iam_endpoint: str | None = None, ec2_rate: Ec2CallRate | None = None) -> AwsClients:
    """Every AWS client the worker uses, built for `region` (SSM shares EC2's endpoint, as moto serves both)."""
    return AwsClients(region=region, ec2=ec2_client(region, ec2_endpoint, ec2_rate or Ec2CallRate()),
                      sqs=sqs_client(region, sqs_endpoint or ec2_endpoint),
                      ssm=ssm_client(region, ec2_endpoint), iam=iam_client(region, iam_endpoint or ec2_endpoint))


def kube_api_client(kubeconfig: str | None, pool_size: int = 64) -> Any:
    """In-cluster config when running in a pod and no kubeconfig is given, else the kubeconfig."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    cfg = k8s.Configuration()
    if kubeconfig or not os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        k8s_config.load_incluster_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = pool_size
    return k8s.ApiClient(cfg)


def ec2_client(region: str | None, endpoint: str | None, rate: Ec2CallRate | None = None) -> Any:
    """botocore's standard retry mode (exponential backoff with full jitter, throttling included); with `rate` (the
    worker's, through `aws_clients`), every request through one token bucket and botocore's retries counted
    (gateways/ec2.py). Tools and tests that build a client themselves are neither paced nor counted."""
    from botocore.config import Config

    # as many connections as threads call it (the cloud activities' 64, the loop's 64 io threads): with 32, a
    # burst of 500 launches discarded connections it then opened again ("Connection pool is full")
    client = _session().client("ec2", region_name=region, endpoint_url=endpoint,
                               config=Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=64))
    if rate is None:
        return client
    return limit_call_rate(count_sdk_retries(client), TokenBucket(rate.per_second, rate.burst))


def sqs_client(region: str | None, endpoint: str | None) -> Any:
    return _session().client("sqs", region_name=region, endpoint_url=endpoint)


def ssm_client(region: str | None, endpoint: str | None) -> Any:
    """SSM, for the public parameters that name EKS-optimized AMIs (EC2NodeClass aliases)."""
    return _session().client("ssm", region_name=region, endpoint_url=endpoint)


def iam_client(region: str, endpoint: str | None) -> Any:
    """IAM, for the instance profiles of EC2NodeClass roles: a global service, but botocore still needs a region
    to pick the partition's endpoint (aws, aws-cn, aws-us-gov)."""
    return _session().client("iam", region_name=region, endpoint_url=endpoint)


def pricing_client(region: str, endpoint: str | None) -> Any:
    """The Price List Query API, for on-demand prices: served from one region per partition (us-east-1 for aws,
    cn-northwest-1 for aws-cn), whatever the cluster's region, as Karpenter's pricing provider does."""
    return _session().client("pricing", region_name="cn-northwest-1" if region.startswith("cn-") else "us-east-1",
                             endpoint_url=endpoint)
