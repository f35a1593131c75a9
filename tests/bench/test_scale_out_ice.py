"""bench/scale_out_ice.py measures what it claims only while its set-up is what it says: the stand-in refuses every
type of the pool's cheapest family in every zone, whichever API asks; each arm's pods need a node each and land in
that arm's pool; the arms alternate; and, end to end at tiny scale, the sequential arm really sends RunInstances
(one per refused offering, one per node) and the fleet arm one CreateFleet per node with the refusals inside it."""

from __future__ import annotations

from api import labels as L
from api.catalog import load_default_catalog
from bench.scale_out_ice import (
    ARM_LABEL,
    ICE,
    TYPES,
    arm_order,
    cheapest_family_types,
    fault_rules,
    main,
    node_pool,
    pod,
)
from devstack.cloud_faults import Faults
from planning.provisioning.fleet import LaunchApi

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def test_the_refused_family_is_every_admitted_type_of_the_cheapest_one() -> None:
    catalog = load_default_catalog()
    assert cheapest_family_types(TYPES, catalog) == ["t3.medium", "t3.large"]
    assert cheapest_family_types(("m5.large", "m6i.large", "c5.large"), catalog) == ["c5.large"]


def test_the_rules_refuse_the_family_in_every_zone_for_both_apis_and_nothing_else() -> None:
    faults = Faults()
    faults.configure({"rules": [r.__dict__ for r in fault_rules(["t3.medium", "t3.large"])]})
    for zone in ZONES:
        for itype in TYPES:
            form = {"Action": "RunInstances", "InstanceType": itype, "Placement.AvailabilityZone": zone}
            assert faults.decide(form) == (ICE if itype.startswith("t3.") else None)
    overrides = {"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName": "lt"}
    for i, (itype, zone) in enumerate(((t, z) for t in TYPES for z in ZONES), start=1):
        overrides[f"LaunchTemplateConfigs.1.Overrides.{i}.InstanceType"] = itype
        overrides[f"LaunchTemplateConfigs.1.Overrides.{i}.AvailabilityZone"] = zone
    refused = faults.refuse_overrides({"Action": "CreateFleet", **overrides})
    assert refused is not None
    errors, left = refused
    assert sorted((e["override"]["InstanceType"], e["override"]["AvailabilityZone"]) for e in errors) == sorted(
        (t, z) for t in ("t3.medium", "t3.large") for z in ZONES)
    assert {v for k, v in left.items() if k.endswith("InstanceType")} == set(TYPES[2:])


def test_arms_alternate_which_goes_first() -> None:
    assert arm_order(3) == [(0, LaunchApi.RUN_INSTANCES), (0, LaunchApi.FLEET), (1, LaunchApi.FLEET),
                            (1, LaunchApi.RUN_INSTANCES), (2, LaunchApi.RUN_INSTANCES), (2, LaunchApi.FLEET)]


def test_a_pod_needs_a_node_of_its_own_in_its_arms_pool() -> None:
    p = pod("ice-0-fleet", 7)
    term = p["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == L.HOSTNAME_LABEL
    assert term["labelSelector"]["matchLabels"] == p["metadata"]["labels"] == {ARM_LABEL: "ice-0-fleet"}
    assert p["spec"]["nodeSelector"] == {L.NODEPOOL_LABEL: "ice-0-fleet"}
    reqs = node_pool("ice-0-fleet")["spec"]["template"]["spec"]["requirements"]
    assert {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": list(TYPES)} in reqs


def test_tiny_run_measures_both_arms_against_the_refused_family() -> None:
    pods, latency = 2, 0.2
    result = main(["--pods", str(pods), "--ec2-latency-ms", str(latency * 1000), "--launch-seconds", "4",
                   "--timeout", "120"])
    assert result["icedTypes"] == ["t3.medium", "t3.large"]
    assert len(result["loadAverage"]["start"]) == 3 and len(result["loadAverage"]["end"]) == 3
    arms = {a["api"]: a for a in result["arms"]}
    assert [a["api"] for a in result["arms"]] == ["run-instances", "fleet"]
    for a in arms.values():
        assert a["finished"] and a["podsBound"] == a["nodeClaimsLaunched"] == a["instancesLaunched"] == pods
        assert not a["duplicateLaunches"] and not a["leakedInstances"]
        assert a["driftedNodeClaims"] == {}  # fresh claims carry their labels once Launched (semantics §4.1)
        assert a["iceAnswers"] >= 1 and not any(t.startswith("t3.") for t in a["instanceTypes"])
        assert 0 < a["launchedSeconds"] <= a["boundSeconds"]
        assert 0 < a["podWaitP50Seconds"] <= a["podWaitMaxSeconds"] <= a["boundSeconds"] + 0.5
    ri, fleet = arms["run-instances"], arms["fleet"]
    # sequential: a refused RunInstances per ICE answer, then one that launches per node; no CreateFleet
    assert ri["launchCalls"] == {"RunInstances": pods + ri["iceAnswers"], "CreateFleet": 0}
    # the first launch met all six refused offerings one after the other, each call held `latency`
    assert ri["launchedSeconds"] >= 7 * latency
    # fleet: one CreateFleet per node, every refusal an override answered inside one (six per call, cache cold)
    assert fleet["launchCalls"] == {"RunInstances": 0, "CreateFleet": pods}
    assert fleet["iceAnswersByCall"] == {"RunInstances": 0, "CreateFleet": fleet["iceAnswers"]}
    assert fleet["iceAnswers"] % 6 == 0
