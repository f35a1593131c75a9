"""parse_message on the documented EventBridge shapes, edge cases, and generated junk (it must never raise)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api import interruption_events as events
from api.interruption import (
    Action,
    InterruptionEvent,
    InterruptionKind,
    Malformed,
    RebalanceMode,
    Unknown,
    action_for,
    parse_message,
    rebalance_mode,
)
from api.provider_id import instance_id_from_provider_id

T0 = "2026-11-22T19:55:07Z"
T0_DT = datetime(2026, 11, 22, 19, 55, 7, tzinfo=UTC)


def spot(instance: str = "i-0a1b2c3d4e5f60718") -> dict:
    return {
        "version": "0", "id": "1e5527d7-bb36-4607-3370-4164db56a40e",
        "detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2",
        "account": "123456789012", "time": T0, "region": "us-east-1",
        "resources": [f"arn:aws:ec2:us-east-1a:instance/{instance}"],
        "detail": {"instance-id": instance, "instance-action": "terminate"},
    }


def rebalance(instance: str = "i-0a1b2c3d4e5f60718") -> dict:
    return {
        "version": "0", "id": "8cd5b3a8-5c0c-4d5c-9e1a-000000000002",
        "detail-type": "EC2 Instance Rebalance Recommendation", "source": "aws.ec2",
        "account": "123456789012", "time": T0, "region": "us-east-1",
        "resources": [f"arn:aws:ec2:us-east-1:123456789012:instance/{instance}"],
        "detail": {"instance-id": instance},
    }


def state_change(state: str, instance: str = "i-abcd1111") -> dict:
    return {
        "version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": "EC2 Instance State-change Notification", "source": "aws.ec2",
        "account": "123456789012", "time": T0, "region": "us-east-1",
        "resources": [f"arn:aws:ec2:us-east-1:123456789012:instance/{instance}"],
        "detail": {"instance-id": instance, "state": state},
    }


def health(instances: list[str], category: str = "scheduledChange", service: str = "EC2") -> dict:
    return {
        "version": "0", "id": "121345678-1234-1234-1234-123456789012",
        "detail-type": "AWS Health Event", "source": "aws.health",
        "account": "123456789012", "time": T0, "region": "us-east-1",
        "resources": instances,
        "detail": {
            "eventArn": "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/abc",
            "service": service, "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "eventTypeCategory": category,
            "startTime": "Sat, 05 Dec 2026 08:00:00 GMT", "endTime": "Sat, 05 Dec 2026 10:00:00 GMT",
            "eventDescription": [{"language": "en_US", "latestDescription": "scheduled for retirement"}],
            "affectedEntities": [{"entityValue": i, "tags": {}} for i in instances],
        },
    }


def parse(doc: dict) -> object:
    return parse_message(json.dumps(doc))


def test_spot_warning_has_deadline_two_minutes_after_event() -> None:
    ev = parse(spot())
    assert isinstance(ev, InterruptionEvent)
    assert ev.kind is InterruptionKind.SPOT_INTERRUPTION
    assert ev.instance_ids == ("i-0a1b2c3d4e5f60718",)
    assert ev.time == T0_DT
    assert ev.deadline == T0_DT + timedelta(minutes=2)
    assert ev.message_id == "1e5527d7-bb36-4607-3370-4164db56a40e"
    assert ev.forceful


def test_rebalance_is_not_forceful_and_has_no_deadline() -> None:
    ev = parse(rebalance("i-0123"))
    assert isinstance(ev, InterruptionEvent)
    assert ev.kind is InterruptionKind.REBALANCE_RECOMMENDATION
    assert ev.instance_ids == ("i-0123",)
    assert ev.deadline is None
    assert not ev.forceful


def test_state_changes_that_end_the_instance_are_events() -> None:
    for state in ("stopping", "stopped", "shutting-down", "terminated"):
        ev = parse(state_change(state))
        assert isinstance(ev, InterruptionEvent), state
        assert ev.kind is InterruptionKind.STATE_CHANGE
        assert ev.state == state
        assert ev.instance_ids == ("i-abcd1111",)


def test_other_states_are_ignored_as_unknown() -> None:
    for state in ("pending", "running"):
        res = parse(state_change(state))
        assert isinstance(res, Unknown)
        assert state in res.reason
        assert res.detail_type == "EC2 Instance State-change Notification"


def test_scheduled_change_lists_every_affected_instance() -> None:
    ev = parse(health(["i-abcd1111", "i-abcd2222", "i-abcd1111"]))
    assert isinstance(ev, InterruptionEvent)
    assert ev.kind is InterruptionKind.SCHEDULED_CHANGE
    assert ev.instance_ids == ("i-abcd1111", "i-abcd2222")
    assert ev.event_type_code == "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
    assert ev.not_before == datetime(2026, 12, 5, 8, 0, tzinfo=UTC)
    assert ev.deadline is None


def test_health_events_that_are_not_ec2_scheduled_changes_are_unknown() -> None:
    assert isinstance(parse(health(["i-1"], category="issue")), Unknown)
    assert isinstance(parse(health(["i-1"], service="RDS")), Unknown)
    assert isinstance(parse(health(["db-instance-1"])), Unknown)


def test_instance_id_falls_back_to_resource_arn() -> None:
    doc = spot("i-0feed")
    del doc["detail"]["instance-id"]
    ev = parse(doc)
    assert isinstance(ev, InterruptionEvent)
    assert ev.instance_ids == ("i-0feed",)


def test_sns_envelope_is_unwrapped() -> None:
    body = json.dumps({"Type": "Notification", "MessageId": "x", "Message": json.dumps(spot())})
    assert isinstance(parse_message(body), InterruptionEvent)


def test_time_offsets_are_normalised_to_utc() -> None:
    doc = spot()
    doc["time"] = "2026-11-22T21:55:07+02:00"
    ev = parse(doc)
    assert isinstance(ev, InterruptionEvent)
    assert ev.time == T0_DT


def test_malformed_bodies() -> None:
    cases = {
        "not json": "{nope",
        "array": "[1, 2]",
        "no detail-type": json.dumps({"source": "aws.ec2", "detail": {}, "time": T0}),
        "detail not an object": json.dumps({**spot(), "detail": "i-1"}),
        "bad time": json.dumps({**spot(), "time": "yesterday"}),
        "bad instance id": json.dumps({**spot(), "detail": {"instance-id": "vol-123"}}),
        "no instance anywhere": json.dumps({**spot(), "detail": {}, "resources": []}),
        "state not a string": json.dumps({**state_change("stopped"), "detail": {"instance-id": "i-1", "state": 3}}),
        "huge": "x" * (300 * 1024),
        "deep nesting": "[" * 100_000,
    }
    for name, body in cases.items():
        assert isinstance(parse_message(body), Malformed), name


def test_unrelated_events_are_unknown() -> None:
    doc = {**spot(), "detail-type": "EC2 Instance Launch Successful", "source": "aws.autoscaling"}
    res = parse(doc)
    assert isinstance(res, Unknown)
    assert res.source == "aws.autoscaling"


def test_timestamp_at_the_end_of_time_is_malformed_not_a_crash() -> None:
    assert isinstance(parse({**spot(), "time": "9999-12-31T23:59:59Z"}), Malformed)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(body: str) -> None:
    assert isinstance(parse_message(body), InterruptionEvent | Unknown | Malformed)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from([spot(), rebalance(), state_change("stopped"), health(["i-1", "i-2"])]),
    key=st.sampled_from(["detail-type", "source", "time", "detail", "resources", "id"]),
    value=json_values,
    detail_key=st.sampled_from(["instance-id", "state", "service", "eventTypeCategory", "affectedEntities",
                                "startTime"]),
    detail_value=json_values,
)
def test_realistic_messages_with_one_field_mangled_never_raise(
    base: dict, key: str, value: object, detail_key: str, detail_value: object
) -> None:
    doc = json.loads(json.dumps(base))
    if isinstance(doc.get("detail"), dict):
        doc["detail"][detail_key] = detail_value
    doc[key] = value
    result = parse_message(json.dumps(doc))
    assert isinstance(result, InterruptionEvent | Unknown | Malformed)
    if isinstance(result, InterruptionEvent):
        assert result.instance_ids and all(i.startswith("i-") for i in result.instance_ids)
        assert result.time.tzinfo is not None


def test_actions_per_kind_and_rebalance_mode() -> None:
    def ev(doc: dict) -> InterruptionEvent:
        res = parse(doc)
        assert isinstance(res, InterruptionEvent)
        return res

    assert action_for(ev(spot())) is Action.PRESPIN_AND_TERMINATE
    assert action_for(ev(state_change("stopping"))) is Action.TERMINATE
    assert action_for(ev(health(["i-1"]))) is Action.TERMINATE
    assert action_for(ev(rebalance())) is Action.EVENT
    assert action_for(ev(rebalance()), rebalance_mode("ignore")) is Action.IGNORE
    assert action_for(ev(rebalance()), rebalance_mode(" Drain ")) is Action.TERMINATE
    assert rebalance_mode(None) is RebalanceMode.EVENT
    assert rebalance_mode("cordon") is RebalanceMode.EVENT


def test_instance_id_from_provider_id() -> None:
    assert instance_id_from_provider_id("aws:///us-east-1a/i-0abc123") == "i-0abc123"
    assert instance_id_from_provider_id("aws:///us-east-1a/i-0abc123/") == "i-0abc123"
    assert instance_id_from_provider_id("kind://docker/node-a") is None
    assert instance_id_from_provider_id(None) is None


def test_message_builders_round_trip_through_the_parser() -> None:
    at = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)
    spot_ev = parse_message(events.spot_warning("i-0abc", at=at, message_id="m-1"))
    assert isinstance(spot_ev, InterruptionEvent) and spot_ev.deadline == at + timedelta(minutes=2)
    assert spot_ev.message_id == "m-1"
    kinds = [parse_message(b) for b in (events.rebalance_recommendation("i-1"), events.state_change("i-1", "stopped"),
                                        events.scheduled_change(["i-1", "i-2"]))]
    assert [k.kind for k in kinds if isinstance(k, InterruptionEvent)] == [
        InterruptionKind.REBALANCE_RECOMMENDATION, InterruptionKind.STATE_CHANGE, InterruptionKind.SCHEDULED_CHANGE]
