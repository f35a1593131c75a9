"""EventBridge interruption messages (as delivered to the SQS interruption queue), parsed into one model.

Pure: no AWS client here. The SQS poller hands every message body to `parse_message`, which never raises,
so a bad message can be counted and deleted instead of being retried forever.
Shapes follow the AWS documentation of the four events Karpenter's interruption controller handles.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from api.provider_id import INSTANCE_ID
from api.timestamps import parse_time

SPOT_WARNING_LEAD = timedelta(minutes=2)
"""EC2 reclaims a spot instance two minutes after the interruption warning."""

DETAIL_SPOT = "EC2 Spot Instance Interruption Warning"
DETAIL_REBALANCE = "EC2 Instance Rebalance Recommendation"
DETAIL_STATE_CHANGE = "EC2 Instance State-change Notification"
DETAIL_HEALTH = "AWS Health Event"
SOURCE_EC2 = "aws.ec2"
SOURCE_HEALTH = "aws.health"

TERMINAL_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})
"""Instance states that mean the node is going away; `pending` and `running` are ignored."""

_MAX_BODY = 256 * 1024  # SQS's own message size limit


class InterruptionKind(StrEnum):
    SPOT_INTERRUPTION = "SpotInterruption"
    REBALANCE_RECOMMENDATION = "RebalanceRecommendation"
    SCHEDULED_CHANGE = "ScheduledChange"
    STATE_CHANGE = "StateChange"


class InterruptionEvent(BaseModel):
    """A message that asks for action on one or more instances."""

    model_config = ConfigDict(frozen=True)

    kind: InterruptionKind
    message_id: str
    instance_ids: tuple[str, ...]
    time: datetime
    deadline: datetime | None = None  # spot: time + 2 min; the termination must finish before it
    state: str | None = None  # state-change events: the new instance state
    event_type_code: str | None = None  # health events, e.g. AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED
    not_before: datetime | None = None  # health events: when the scheduled change starts

    @property
    def forceful(self) -> bool:
        """Whether the node must go whatever budgets say (every kind except a rebalance recommendation)."""
        return self.kind is not InterruptionKind.REBALANCE_RECOMMENDATION


class Unknown(BaseModel):
    """Well-formed JSON that is not an event we act on (other detail types, ignored states, other services)."""

    model_config = ConfigDict(frozen=True)

    outcome: Literal["unknown"] = "unknown"
    reason: str
    message_id: str = ""
    detail_type: str = ""
    source: str = ""


class Malformed(BaseModel):
    """A body that cannot be understood at all (not JSON, wrong field types, no instance id)."""

    model_config = ConfigDict(frozen=True)

    outcome: Literal["malformed"] = "malformed"
    reason: str


ParseResult = InterruptionEvent | Unknown | Malformed


def parse_message(body: str) -> ParseResult:
    """Parse one SQS message body; never raises."""
    try:
        return _parse(body)
    except Exception as exc:  # any surprise is a malformed message, not a crash of the poller
        return Malformed(reason=f"unexpected {type(exc).__name__}: {exc}"[:300])


def _parse(body: str) -> ParseResult:
    if not isinstance(body, str):
        return Malformed(reason="body is not a string")
    if len(body) > _MAX_BODY:
        return Malformed(reason=f"body of {len(body)} characters exceeds {_MAX_BODY}")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return Malformed(reason=f"not JSON: {exc}"[:300])
    doc = _unwrap_sns(doc)
    if not isinstance(doc, dict):
        return Malformed(reason=f"top level is {type(doc).__name__}, not an object")
    detail_type = doc.get("detail-type")
    source = doc.get("source")
    if not isinstance(detail_type, str) or not isinstance(source, str):
        return Malformed(reason="missing string fields 'detail-type' and 'source'")
    message_id = doc.get("id") if isinstance(doc.get("id"), str) else ""
    detail = doc.get("detail")
    if not isinstance(detail, dict):
        return Malformed(reason="missing object field 'detail'")
    time = _parse_time(doc.get("time"))
    if time is None:
        return Malformed(reason=f"field 'time' is not an RFC 3339 timestamp: {doc.get('time')!r}"[:300])

    def unknown(reason: str) -> Unknown:
        return Unknown(reason=reason, message_id=message_id, detail_type=detail_type[:200], source=source[:200])

    if source == SOURCE_EC2 and detail_type == DETAIL_SPOT:
        return _ec2_event(InterruptionKind.SPOT_INTERRUPTION, doc, detail, message_id, time,
                          deadline=time + SPOT_WARNING_LEAD)
    if source == SOURCE_EC2 and detail_type == DETAIL_REBALANCE:
        return _ec2_event(InterruptionKind.REBALANCE_RECOMMENDATION, doc, detail, message_id, time)
    if source == SOURCE_EC2 and detail_type == DETAIL_STATE_CHANGE:
        state = detail.get("state")
        if not isinstance(state, str):
            return Malformed(reason="state-change event without a string 'detail.state'")
        if state not in TERMINAL_STATES:
            return unknown(f"instance state {state!r} needs no action")
        return _ec2_event(InterruptionKind.STATE_CHANGE, doc, detail, message_id, time, state=state)
    if source == SOURCE_HEALTH and detail_type == DETAIL_HEALTH:
        return _health_event(detail, message_id, time, unknown)
    return unknown(f"unhandled event {source!r} / {detail_type!r}"[:300])


def _unwrap_sns(doc: Any) -> Any:
    """Accept an EventBridge event relayed through SNS (raw delivery off), whose body wraps it in `Message`."""
    if isinstance(doc, dict) and doc.get("Type") == "Notification" and isinstance(doc.get("Message"), str):
        try:
            return json.loads(doc["Message"])
        except (ValueError, RecursionError):
            return doc
    return doc


def _ec2_event(kind: InterruptionKind, doc: dict[str, Any], detail: dict[str, Any], message_id: str,
               time: datetime, *, deadline: datetime | None = None, state: str | None = None) -> ParseResult:
    ids = _instance_ids_from_ec2(doc, detail)
    if isinstance(ids, Malformed):
        return ids
    return InterruptionEvent(kind=kind, message_id=message_id, instance_ids=ids, time=time,
                             deadline=deadline, state=state)


def _instance_ids_from_ec2(doc: dict[str, Any], detail: dict[str, Any]) -> tuple[str, ...] | Malformed:
    """`detail.instance-id` is authoritative; the instance ARN in `resources` is the fallback."""
    raw = detail.get("instance-id")
    if raw is not None:
        if not isinstance(raw, str) or not INSTANCE_ID.match(raw):
            return Malformed(reason=f"'detail.instance-id' is not an instance id: {raw!r}"[:300])
        return (raw,)
    ids = tuple(dict.fromkeys(i for i in map(_instance_id_from_arn, _str_list(doc.get("resources"))) if i))
    return ids or Malformed(reason="no instance id in 'detail.instance-id' or 'resources'")


def _instance_id_from_arn(value: str) -> str | None:
    candidate = value.rsplit("/", 1)[-1] if "/" in value else value
    return candidate if INSTANCE_ID.match(candidate) else None


def _health_event(detail: dict[str, Any], message_id: str, time: datetime, unknown: Any) -> ParseResult:
    service = detail.get("service")
    category = detail.get("eventTypeCategory")
    if service != "EC2":
        return unknown(f"health event for service {service!r}, not EC2")
    if category != "scheduledChange":
        return unknown(f"health event category {category!r}, not scheduledChange")
    entities = detail.get("affectedEntities")
    if not isinstance(entities, list):
        return Malformed(reason="scheduled change without a list 'detail.affectedEntities'")
    values = [e.get("entityValue") for e in entities if isinstance(e, dict)]
    ids = tuple(dict.fromkeys(v for v in values if isinstance(v, str) and INSTANCE_ID.match(v)))
    if not ids:
        return unknown("scheduled change affects no EC2 instance")
    code = detail.get("eventTypeCode")
    return InterruptionEvent(
        kind=InterruptionKind.SCHEDULED_CHANGE, message_id=message_id, instance_ids=ids, time=time,
        event_type_code=code if isinstance(code, str) else None,
        not_before=_parse_time(detail.get("startTime")),
    )


def _str_list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _parse_time(value: Any) -> datetime | None:
    """RFC 3339 (EventBridge uses `2026-11-22T19:55:00Z`); health events may use RFC 1123. Always UTC-aware."""
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    parsed = parse_time(value)
    if parsed is not None:
        return parsed
    try:
        return datetime.strptime(value, "%a, %d %b %Y %H:%M:%S %Z").replace(tzinfo=UTC)
    except ValueError:
        return None


class RebalanceMode(StrEnum):
    """What a NodePool wants done on a rebalance recommendation (annotation `nodeflow.dev/rebalance`)."""

    IGNORE = "ignore"
    EVENT = "event"
    DRAIN = "drain"


DEFAULT_REBALANCE_MODE = RebalanceMode.EVENT


def rebalance_mode(value: str | None) -> RebalanceMode:
    """Annotation value -> mode; absent or unrecognised values fall back to emitting an Event (Karpenter's way)."""
    try:
        return RebalanceMode((value or "").strip().lower())
    except ValueError:
        return DEFAULT_REBALANCE_MODE


class Action(StrEnum):
    """What the intake does for one instance of an event."""

    PRESPIN_AND_TERMINATE = "PrespinAndTerminate"  # spot: launch a replacement now, terminate by the deadline
    TERMINATE = "Terminate"  # forceful, graceful drain within the node's own grace period
    EVENT = "Event"  # record a Kubernetes Event on the Node, nothing else
    IGNORE = "Ignore"


def action_for(event: InterruptionEvent, mode: RebalanceMode = DEFAULT_REBALANCE_MODE) -> Action:
    if event.kind is InterruptionKind.SPOT_INTERRUPTION:
        return Action.PRESPIN_AND_TERMINATE
    if event.kind is InterruptionKind.REBALANCE_RECOMMENDATION:
        return {RebalanceMode.IGNORE: Action.IGNORE, RebalanceMode.EVENT: Action.EVENT,
                RebalanceMode.DRAIN: Action.TERMINATE}[mode]
    return Action.TERMINATE


TERMINATION_REASONS: dict[InterruptionKind, str] = {
    InterruptionKind.SPOT_INTERRUPTION: "SpotInterrupted",
    InterruptionKind.REBALANCE_RECOMMENDATION: "RebalanceRecommendation",
    InterruptionKind.SCHEDULED_CHANGE: "ScheduledChange",
    InterruptionKind.STATE_CHANGE: "InstanceStateChange",
}
"""The `reason` a termination started by an interruption carries (search attribute, metrics, events)."""
