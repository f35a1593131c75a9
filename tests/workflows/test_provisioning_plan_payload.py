"""A provisioning plan as a workflow payload (contracts/provisioning.py ProvisioningPlan): a plan of many launches
names each distinct Replacement once, so Karpenter's hostname-spreading-xl (1,000 launches) stays far under
Temporal's 2 MiB payload limit; a small plan reads as before in the Temporal UI; both forms, and the form recorded
in older histories, read back into the same plan through the converter the workers use."""

from __future__ import annotations

import json

from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.disruption import Replacement
from contracts.provisioning import COMPACT_ABOVE, NodeClaimLaunch, ProvisioningPlan

TYPES = [f"m5.{i}xlarge" for i in range(60)]  # Karpenter's suite NodePool admits about this many


def _plan(launches: int) -> ProvisioningPlan:
    replacements = [Replacement(instance_types=TYPES, price=0.1 * i, zone=zone, requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": TYPES}])
        for i, zone in enumerate(["us-east-1a", "us-east-1b", "us-east-1c"])]
    return ProvisioningPlan(launches=[NodeClaimLaunch(node_pool="default", replacement=replacements[i % 3],
                                                      pods=[f"shop/web-{i}"]) for i in range(launches)],
                            nominated=2, unservable=["shop/gpu"])


def _payload(plan: ProvisioningPlan) -> bytes:
    return pydantic_data_converter.payload_converter.to_payloads([plan])[0].data


def _read(data: bytes) -> ProvisioningPlan:
    """The plan a workflow reads from a payload holding `data` (JSON, as a history records it)."""
    (payload,) = pydantic_data_converter.payload_converter.to_payloads([{}])  # a json/plain payload
    payload.data = data
    return pydantic_data_converter.payload_converter.from_payloads([payload], [ProvisioningPlan])[0]


def test_a_plan_of_a_thousand_launches_names_each_replacement_once_and_reads_back_whole() -> None:
    plan = _plan(1000)
    data = _payload(plan)
    written = json.loads(data)
    assert len(written["replacements"]) == 3
    assert {launch["replacement_index"] for launch in written["launches"]} == {0, 1, 2}
    as_before = json.dumps(plan.model_dump(mode="python"), separators=(",", ":")).encode()
    assert len(as_before) > 1_800_000 and len(data) < 100_000  # 2 MiB is Temporal's limit
    assert _read(data) == plan


def test_a_small_plan_is_written_as_before() -> None:
    plan = _plan(COMPACT_ABOVE)
    written = json.loads(_payload(plan))
    assert "replacements" not in written and all("replacement" in launch for launch in written["launches"])
    assert _read(_payload(plan)) == plan


def test_a_large_plan_recorded_before_the_compact_form_still_reads() -> None:
    plan = _plan(COMPACT_ABOVE + 10)
    recorded = json.dumps(plan.model_dump(mode="python")).encode()  # every launch with its own Replacement
    assert _read(recorded) == plan
