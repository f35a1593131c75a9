"""Fixtures the node-class, launch and reservation activity tests share: the AWS stand-in's world (moto with the
devstack's extensions: tags, a VPC, images) and the Kubernetes gateway over the simulator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.nodeclass_world import AwsWorld

from gateways.kube import KubeClient


@pytest.fixture
def world(moto_endpoint: str) -> AwsWorld:
    return AwsWorld(moto_endpoint)


@pytest.fixture
def kube(k8s: Any) -> Iterator[KubeClient]:
    yield KubeClient(k8s)
