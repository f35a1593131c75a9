"""The EC2 stand-in's fault knob decides as its rules say (devstack/cloud_faults.py): by action and parameters,
at a seeded rate, at most `times` times; its error document is what botocore's EC2 parser reads."""

from __future__ import annotations

import botocore.session
from botocore.parsers import create_parser

from devstack.cloud_faults import STATUS, FaultRule, Faults, error_body, no_instance_body, with_errors


def _faults(*rules: FaultRule, seed: int = 0) -> Faults:
    faults = Faults()
    faults.configure({"rules": [r.__dict__ for r in rules], "seed": seed})
    return faults


def test_a_rule_matches_its_action_and_parameters_only() -> None:
    faults = _faults(FaultRule("RunInstances", "InsufficientInstanceCapacity", params={"InstanceType": "m5.large"}))
    assert faults.decide({"Action": "RunInstances", "InstanceType": "m5.large"}) == "InsufficientInstanceCapacity"
    assert faults.decide({"Action": "RunInstances", "InstanceType": "m5.xlarge"}) is None
    assert faults.decide({"Action": "TerminateInstances"}) is None
    assert faults.report()["calls"] == {"RunInstances": 2, "TerminateInstances": 1}
    assert faults.report()["injected"] == {"RunInstances": 1}


def test_times_scripts_the_first_calls_and_rate_a_repeatable_share() -> None:
    faults = _faults(FaultRule("TerminateInstances", "UnauthorizedOperation", times=2))
    assert [faults.decide({"Action": "TerminateInstances"}) for _ in range(4)] == [
        "UnauthorizedOperation", "UnauthorizedOperation", None, None]
    throttled = _faults(FaultRule("RunInstances", "RequestLimitExceeded", rate=0.3), seed=5)
    first = [throttled.decide({"Action": "RunInstances"}) for _ in range(1000)]
    again = _faults(FaultRule("RunInstances", "RequestLimitExceeded", rate=0.3), seed=5)
    assert first == [again.decide({"Action": "RunInstances"}) for _ in range(1000)]
    assert 250 < first.count("RequestLimitExceeded") < 350


def test_the_error_document_parses_as_ec2s() -> None:
    parsed = create_parser("ec2").parse({"status_code": STATUS["RequestLimitExceeded"], "headers": {},
                                         "body": error_body("RequestLimitExceeded")}, None)
    assert parsed["Error"]["Code"] == "RequestLimitExceeded"


def _fleet_form() -> dict[str, str]:
    """A CreateFleet form: two launch templates, the first with two overrides, the second with one."""
    form = {"Action": "CreateFleet", "Type": "instant", "ClientToken": "t-1",
            "TargetCapacitySpecification.DefaultTargetCapacityType": "on-demand",
            "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName": "nodeflow.dev/one",
            "LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version": "$Latest",
            "LaunchTemplateConfigs.2.LaunchTemplateSpecification.LaunchTemplateName": "nodeflow.dev/two",
            "LaunchTemplateConfigs.2.LaunchTemplateSpecification.Version": "$Latest"}
    for c, o, itype, zone in ((1, 1, "t3.large", "us-east-1a"), (1, 2, "t3.large", "us-east-1b"),
                              (2, 1, "c5.large", "us-east-1a")):
        form[f"LaunchTemplateConfigs.{c}.Overrides.{o}.InstanceType"] = itype
        form[f"LaunchTemplateConfigs.{c}.Overrides.{o}.AvailabilityZone"] = zone
        form[f"LaunchTemplateConfigs.{c}.Overrides.{o}.SubnetId"] = f"subnet-{zone[-1]}"
    return form


def test_a_fleet_capacity_rule_refuses_matching_overrides_and_keeps_the_rest_renumbered() -> None:
    faults = _faults(FaultRule("CreateFleet", "InsufficientInstanceCapacity", params={"InstanceType": "t3.large",
                                                                                     "AvailabilityZone": "us-east-1a"}))
    form = _fleet_form()
    assert faults.decide(form) is None  # not the whole call: per override
    refused = faults.refuse_overrides(form)
    assert refused is not None
    errors, left = refused
    assert [(e["override"]["InstanceType"], e["override"]["AvailabilityZone"], e["code"]) for e in errors] == [
        ("t3.large", "us-east-1a", "InsufficientInstanceCapacity")]
    assert left["LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone"] == "us-east-1b"  # moved up to 1
    assert "LaunchTemplateConfigs.1.Overrides.2.InstanceType" not in left
    assert left["LaunchTemplateConfigs.2.Overrides.1.InstanceType"] == "c5.large"
    assert left["ClientToken"] == "t-1" and faults.report()["injected"] == {"CreateFleet": 1}


def test_a_fleet_whose_every_override_is_refused_keeps_no_config() -> None:
    faults = _faults(FaultRule("CreateFleet", "InsufficientInstanceCapacity"))
    refused = faults.refuse_overrides(_fleet_form())
    assert refused is not None
    errors, left = refused
    assert len(errors) == 3 and not [k for k in left if k.startswith("LaunchTemplateConfigs.")]
    assert _faults(FaultRule("CreateFleet", "RequestLimitExceeded")).refuse_overrides(_fleet_form()) is None
    assert _faults(FaultRule("CreateFleet", "InsufficientInstanceCapacity", params={"InstanceType": "m5.large"})
                   ).refuse_overrides(_fleet_form()) is None


def test_fleet_errors_parse_as_ec2s_createfleet_answer() -> None:
    faults = _faults(FaultRule("CreateFleet", "InsufficientInstanceCapacity", params={"InstanceType": "t3.large"}),
                     FaultRule("CreateFleet", "UnfulfillableCapacity"))
    refused = faults.refuse_overrides({**_fleet_form(),
                                       "TargetCapacitySpecification.DefaultTargetCapacityType": "spot"})
    assert refused is not None
    errors = refused[0]
    parser = create_parser("ec2")
    model = botocore.session.get_session().get_service_model("ec2")
    shape = model.operation_model("CreateFleet").output_shape
    alone = parser.parse({"status_code": 200, "headers": {}, "body": no_instance_body(errors)}, shape)
    assert alone["Instances"] == [] and alone["FleetId"].startswith("fleet-")
    assert [(e["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"],
             e["LaunchTemplateAndOverrides"]["Overrides"]["AvailabilityZone"], e["ErrorCode"], e["Lifecycle"])
            for e in alone["Errors"]] == [("t3.large", "us-east-1a", "InsufficientInstanceCapacity", "spot"),
                                          ("t3.large", "us-east-1b", "InsufficientInstanceCapacity", "spot"),
                                          ("c5.large", "us-east-1a", "UnfulfillableCapacity", "spot")]
    assert alone["Errors"][0]["LaunchTemplateAndOverrides"]["LaunchTemplateSpecification"] == {
        "LaunchTemplateName": "nodeflow.dev/one", "Version": "$Latest"}
    assert "t3.large capacity" in alone["Errors"][0]["ErrorMessage"]
    moto = (b'<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId>'
            b"<fleetId>fleet-1</fleetId><fleetInstanceSet><item><instanceIds><item>i-1</item></instanceIds>"
            b"<instanceType>c5.large</instanceType><lifecycle>spot</lifecycle></item></fleetInstanceSet>"
            b"</CreateFleetResponse>")
    beside = parser.parse({"status_code": 200, "headers": {}, "body": with_errors(moto, errors[:1])}, shape)
    assert beside["Instances"][0]["InstanceIds"] == ["i-1"] and len(beside["Errors"]) == 1


def test_delays_hold_the_named_actions_only_and_are_replaced_with_the_rules() -> None:
    faults = Faults()
    faults.configure({"rules": [], "delayMs": {"RunInstances": 300, "CreateFleet": 250}})
    assert (faults.delay("RunInstances"), faults.delay("CreateFleet"), faults.delay("DescribeInstances")) == (
        0.3, 0.25, 0.0)
    assert faults.report()["delayMs"] == {"RunInstances": 300.0, "CreateFleet": 250.0}
    faults.configure({"rules": []})
    assert faults.delay("RunInstances") == 0.0 and faults.report()["delayMs"] == {}
