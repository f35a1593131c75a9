"""Malformed SQS interruption messages through `api.interruption.parse_message`.

The poller deletes whatever this returns as Malformed/Unknown, so the property is stronger than "never raises"
(which a catch-all guarantees): no message may reach the catch-all (`unexpected ...`), every event names
well-formed instance ids, and every result serialises (it crosses the Temporal boundary).
"""

from __future__ import annotations

import json

from fuzz.strategies import fuzz_settings, junk, mutated
from hypothesis import given
from hypothesis import strategies as st

from api import interruption_events as ev
from api.interruption import InterruptionEvent, Malformed, Unknown, action_for, parse_message

FUZZ = fuzz_settings(100)
VALID = [ev.spot_warning("i-0123456789abcdef0"), ev.rebalance_recommendation("i-0123456789abcdef0"),
         ev.state_change("i-0123456789abcdef0", "terminated"), ev.scheduled_change(["i-0123456789abcdef0"])]
DOCS = [json.loads(v) for v in VALID]


def _check(body: str) -> None:
    result = parse_message(body)
    assert isinstance(result, InterruptionEvent | Unknown | Malformed)
    if isinstance(result, Malformed):
        assert not result.reason.startswith("unexpected"), result.reason
    if isinstance(result, InterruptionEvent):
        assert result.instance_ids and all(i.startswith("i-") for i in result.instance_ids)
        action_for(result)
    result.model_dump_json()


def test_valid_messages_parse() -> None:
    assert all(isinstance(parse_message(v), InterruptionEvent) for v in VALID)


@FUZZ
@given(doc=st.sampled_from(DOCS).flatmap(lambda d: mutated(d, max_mutations=3)), sns=st.booleans())
def test_mutated_events(doc: dict, sns: bool) -> None:
    body = json.dumps(doc, allow_nan=True)
    if sns:
        body = json.dumps({"Type": "Notification", "Message": body})
    _check(body)


@FUZZ
@given(value=junk)
def test_any_json(value: object) -> None:
    _check(json.dumps(value, allow_nan=True))


@FUZZ
@given(body=st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_any_text(body: str) -> None:
    _check(body)


def test_edge_bodies() -> None:
    for body in ("", "null", "[" * 5000 + "]" * 5000, '{"a":' * 3000 + "1" + "}" * 3000, "x" * 300_000,
                 json.dumps({"Type": "Notification", "Message": "not json"})):
        result = parse_message(body)
        assert isinstance(result, Malformed | Unknown), result
        assert not result.reason.startswith("unexpected"), result.reason
