"""The process's clients of Kubernetes, EC2, SQS, SSM and IAM, configured once (pools sized for the activities)."""

from __future__ import annotations

import os
from typing import Any


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


def ec2_client(region: str | None, endpoint: str | None) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("ec2", region_name=region, endpoint_url=endpoint,
                        config=Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=32))


def sqs_client(region: str | None, endpoint: str | None) -> Any:
    import boto3

    return boto3.client("sqs", region_name=region, endpoint_url=endpoint)


def ssm_client(region: str | None, endpoint: str | None) -> Any:
    """SSM, for the public parameters that name EKS-optimized AMIs (EC2NodeClass aliases)."""
    import boto3

    return boto3.client("ssm", region_name=region, endpoint_url=endpoint)


def iam_client(endpoint: str | None) -> Any:
    """IAM, for the instance profiles of EC2NodeClass roles (a global service)."""
    import boto3

    return boto3.client("iam", endpoint_url=endpoint)
