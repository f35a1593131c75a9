"""The EC2 stand-in's fault knob decides as its rules say (devstack/cloud_faults.py): by action and parameters,
at a seeded rate, at most `times` times; its error document is what botocore's EC2 parser reads."""

from __future__ import annotations

from botocore.parsers import create_parser

from devstack.cloud_faults import STATUS, FaultRule, Faults, error_body


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
