"""The worker's unavailable offerings across launches and interruptions (moto + simulator, fake clock).

ICE on one offering: the launch passes to the next and marks it; the next launch does not ask EC2 for it again;
after 3 minutes it does. A spot interruption marks the node's offering; every offering marked is no capacity,
without a call to EC2.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from support.nodeclass_world import create, node_pool
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.planning_runner import PlanningActivities
from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from api.interruption import InterruptionEvent, InterruptionKind
from contracts.disruption import LaunchInput, Replacement
from contracts.errors import ErrorType
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import TTL_SECONDS, UnavailableOfferings, UnavailableReason
from runtime.cloud_clients import ec2_client
from runtime.interruption import InterruptionDispatcher, index_nodes
from simulator.ec2 import DEFAULT_AMI, IceInjector

ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]


class FakeClock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ec2(moto_endpoint: str) -> Iterator[Any]:
    client = ec2_client("us-east-1", moto_endpoint)
    before = _running(client)
    yield client
    leftover = sorted(_running(client) - before)
    if leftover:  # moto is shared by the session: leave nothing running for another test to adopt
        client.terminate_instances(InstanceIds=leftover)


def _running(client: Any) -> set[str]:
    resp = client.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return {i["InstanceId"] for r in resp["Reservations"] for i in r["Instances"]}


def _launch(acts: ProvisioningActivities, key: str, zone: str | None = None) -> Any:
    inp = LaunchInput(key=key, node_pool="web", reason="Underutilized",
                      replacement=Replacement(instance_types=["m5.large", "m5.xlarge"], capacity_type="on-demand",
                                              zone=zone))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


async def test_ice_moves_this_launch_and_the_next_to_another_offering_for_three_minutes(kube: KubeClient,
                                                                                        ec2: Any) -> None:
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))  # no EC2NodeClass: the plain launch
    ice = IceInjector().install(ec2)
    ice.exhaust("m5.large", "us-east-1a")
    clock = FakeClock()
    cache = UnavailableOfferings(clock)
    catalog = load_default_catalog()
    acts = ProvisioningActivities(kube, ec2, catalog, ami_id=DEFAULT_AMI, offerings=cache)

    first = await _launch(acts, "disrupt-a/1/0")
    assert (first.instance_type, first.zone) == ("m5.large", "us-east-1b")  # 1a refused, same price in 1b
    assert ice.refused == [("m5.large", "us-east-1a")]
    assert cache.unavailable("m5.large", "us-east-1a", "on-demand")

    second = await _launch(acts, "disrupt-b/1/0")
    assert (second.instance_type, second.zone) == ("m5.large", "us-east-1b")
    assert ice.refused == [("m5.large", "us-east-1a")]  # EC2 was not asked for the marked offering again

    planner = PlanningActivities(kube, catalog=catalog, offerings=cache)  # the next plan sees it unavailable
    planned = planner._catalog_for(None)
    assert planned is not None and not planned.get("m5.large").offering("us-east-1a", "on-demand").available

    pinned = await _launch(acts, "disrupt-c/1/0", "us-east-1a")  # only 1a allowed: m5.xlarge, not m5.large
    assert (pinned.instance_type, pinned.zone) == ("m5.xlarge", "us-east-1a")
    assert ice.refused == [("m5.large", "us-east-1a")]
    clock.now += TTL_SECONDS
    third = await _launch(acts, "disrupt-d/1/0")
    assert ice.refused == [("m5.large", "us-east-1a")] * 2  # expired: asked again (and refused again)
    assert (third.instance_type, third.zone) == ("m5.large", "us-east-1b")


async def test_every_offering_marked_is_no_capacity_without_asking_ec2(kube: KubeClient, ec2: Any) -> None:
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))
    ice = IceInjector().install(ec2)
    cache = UnavailableOfferings(FakeClock())
    for itype in ("m5.large", "m5.xlarge"):
        cache.mark(itype, "us-east-1c", "on-demand", UnavailableReason.INSUFFICIENT_INSTANCE_CAPACITY)
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI, offerings=cache)
    with pytest.raises(ApplicationError) as err:
        await _launch(acts, "disrupt-e/1/0", "us-east-1c")
    assert err.value.type == ErrorType.INSUFFICIENT_CAPACITY.value and err.value.non_retryable
    assert "refused in the last 180s" in str(err.value)
    assert ice.refused == [] and kube.list_node_claims() == []  # no call, and the claim is gone


async def test_a_spot_interruption_marks_the_nodes_offering(kube: KubeClient) -> None:
    cache = UnavailableOfferings(FakeClock())
    started: list[Any] = []

    async def start(inp: Any) -> None:
        started.append(inp)

    dispatcher = InterruptionDispatcher(kube, load_default_catalog(), start, start, offerings=cache)
    node = {"metadata": {"name": "n1", "uid": "u1", "labels": {
        labels.INSTANCE_TYPE_LABEL: "c5.large", labels.CAPACITY_TYPE_LABEL: "spot", labels.ZONE_LABEL: "us-east-1b"}},
        "spec": {"providerID": "aws:///us-east-1b/i-0123"}}
    nodes = index_nodes([node], [])
    now = datetime.now(UTC)
    rebalance = InterruptionEvent(kind=InterruptionKind.REBALANCE_RECOMMENDATION, message_id="m0",
                                  instance_ids=("i-0123",), time=now)
    await dispatcher.dispatch(rebalance, nodes)
    assert cache.marked() == set()  # only a spot interruption takes the capacity back
    event = InterruptionEvent(kind=InterruptionKind.SPOT_INTERRUPTION, message_id="m1", instance_ids=("i-0123",),
                              time=now, deadline=now)
    await dispatcher.dispatch(event, nodes)
    assert cache.marked() == {("c5.large", "us-east-1b", "spot")}


class _Refusal:
    status_code = 400
    headers: dict[str, str] = {}


async def test_a_type_unsupported_in_a_zone_is_marked_and_the_launch_moves_on(kube: KubeClient, ec2: Any) -> None:
    """EC2 answers `Unsupported` for a type its zone does not offer: Karpenter counts it unfulfillable for that
    offering, so the launch passes to the next zone instead of failing."""
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))
    asked: list[tuple[str, str]] = []

    def unsupported(params: dict[str, Any], **_: Any) -> Any:
        body = params.get("body") or {}
        offer = (body.get("InstanceType", ""), body.get("Placement.AvailabilityZone", ""))
        asked.append(offer)
        if offer != ("m5.large", "us-east-1a"):
            return None
        return _Refusal(), {"Error": {"Code": "Unsupported", "Message": "not supported in us-east-1a"},
                            "ResponseMetadata": {"HTTPStatusCode": 400}}

    ec2.meta.events.register("before-call.ec2.RunInstances", unsupported)
    reasons: list[UnavailableReason] = []
    cache = UnavailableOfferings(FakeClock(), on_mark=reasons.append)
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI, offerings=cache)
    launched = await _launch(acts, "disrupt-u/1/0")
    assert (launched.instance_type, launched.zone) == ("m5.large", "us-east-1b")
    assert asked == [("m5.large", "us-east-1a"), ("m5.large", "us-east-1b")]
    assert reasons == [UnavailableReason.UNSUPPORTED] and cache.unavailable("m5.large", "us-east-1a", "on-demand")


async def test_an_offering_has_one_client_token_whichever_attempt_asks(kube: KubeClient, ec2: Any) -> None:
    """Two attempts of one launch running at once (a heartbeat timeout while Temporal restarts, docs/decisions.md
    §26), each on a worker of its own: the second, which no longer asks for the refused offering, asks for the next one
    with the token the first used for it, so EC2 answers both with one instance (moto keeps no ClientToken: the
    test reads the tokens asked with)."""
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))
    ice = IceInjector().install(ec2)
    ice.exhaust("m5.large", "us-east-1a")
    tokens: list[tuple[str, str]] = []
    ec2.meta.events.register("provide-client-params.ec2.RunInstances",
                             lambda params, **_: tokens.append((params["Placement"]["AvailabilityZone"],
                                                                params["ClientToken"])))
    first = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI,
                                   offerings=UnavailableOfferings(FakeClock()))
    launched = await _launch(first, "disrupt-t/1/0")
    assert (launched.instance_type, launched.zone) == ("m5.large", "us-east-1b")

    cache = UnavailableOfferings(FakeClock())  # the other worker has seen the refusal too (its own launch earlier)
    cache.mark("m5.large", "us-east-1a", "on-demand", UnavailableReason.INSUFFICIENT_INSTANCE_CAPACITY)
    second = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI, offerings=cache)
    second._existing_instance = lambda *_: None  # type: ignore[method-assign]  # the first's instance not seen yet
    await _launch(second, "disrupt-t/1/0")
    assert [zone for zone, _ in tokens] == ["us-east-1a", "us-east-1b", "us-east-1b"]
    assert tokens[1][1] == tokens[2][1] != tokens[0][1]
