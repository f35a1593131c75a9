"""A provisioning batch's payloads stay under what a Temporal server accepts, however wide its NodePools are.

The server refuses a payload past `limit.blobSize.error` (2 MiB by default, in Temporal Cloud too): a plan activity
whose result passed it fails ("Complete result exceeds size limit."), every retry the same way, and its pods get no
capacity. The
batch cap (contracts/provisioning.MAX_BATCH_PODS) is what bounds the plan; these cases are the worst a batch can be.
"""

from __future__ import annotations

from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.disruption import Replacement
from contracts.provisioning import (
    MAX_BATCH_PODS,
    NodeClaimLaunch,
    PodRef,
    ProvisioningInput,
    ProvisioningPlan,
)

SERVER_LIMIT = 2 * 1024 * 1024  # limit.blobSize.error
TYPES = [f"m7i-flex.{n}xlarge" if n % 2 else f"x2iedn.{n}xlarge" for n in range(60)]  # Karpenter's 60, long names
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"]


def _size(value: object) -> int:
    return len(pydantic_data_converter.payload_converter.to_payloads([value])[0].data)


def _pod(n: int) -> PodRef:
    return PodRef(key=f"{'team-analytics-batch-processing'[:30]}/spark-executor-{n:06d}-{'x' * 24}",
                  uid=f"{n:08x}-0000-4000-8000-{n:012x}")


def _plan(pods: int) -> ProvisioningPlan:
    """A launch per pod (hostname anti-affinity), each allowed Karpenter's 60 types in every zone."""
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": TYPES},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ZONES}]
    return ProvisioningPlan(launches=[
        NodeClaimLaunch(node_pool="general-purpose-default", pods=[_pod(n).key],
                        replacement=Replacement(instance_types=TYPES, capacity_type="on-demand", price=0.0416,
                                                requirements=requirements))
        for n in range(pods)])


def test_the_worst_plan_of_a_full_batch_fits_in_one_payload() -> None:
    size = _size(_plan(MAX_BATCH_PODS))
    assert size < SERVER_LIMIT * 0.75, size  # ~1.3 MiB: room for longer names than these


def test_twice_the_batch_would_not_fit_so_the_cap_is_what_keeps_it() -> None:
    assert _size(_plan(2 * MAX_BATCH_PODS)) > SERVER_LIMIT


def test_a_full_batch_s_input_and_memo_are_small() -> None:
    pods = [_pod(n) for n in range(MAX_BATCH_PODS)]
    assert _size(ProvisioningInput(pods=pods)) < SERVER_LIMIT / 10
    assert _size({"pods": sorted(p.uid for p in pods)}) < SERVER_LIMIT / 50
