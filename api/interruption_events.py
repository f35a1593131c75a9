"""EventBridge messages as AWS delivers them to the interruption queue, for the demo, benchmarks and tests.

The inverse of `api.interruption.parse_message`: each builder returns the JSON body of one SQS message.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from api.timestamps import format_seconds

ACCOUNT = "123456789012"


def _stamp(at: datetime | None) -> str:
    return format_seconds(at or datetime.now(UTC))


def ec2_event(detail_type: str, instance_id: str, detail: dict[str, Any] | None = None, *,
              at: datetime | None = None, message_id: str | None = None, region: str = "us-east-1") -> str:
    return json.dumps({
        "version": "0", "id": message_id or str(uuid.uuid4()), "detail-type": detail_type, "source": "aws.ec2",
        "account": ACCOUNT, "time": _stamp(at), "region": region,
        "resources": [f"arn:aws:ec2:{region}:{ACCOUNT}:instance/{instance_id}"],
        "detail": {"instance-id": instance_id, **(detail or {})},
    })


def spot_warning(instance_id: str, **kw: Any) -> str:
    return ec2_event("EC2 Spot Instance Interruption Warning", instance_id, {"instance-action": "terminate"}, **kw)


def rebalance_recommendation(instance_id: str, **kw: Any) -> str:
    return ec2_event("EC2 Instance Rebalance Recommendation", instance_id, **kw)


def state_change(instance_id: str, state: str, **kw: Any) -> str:
    return ec2_event("EC2 Instance State-change Notification", instance_id, {"state": state}, **kw)


def scheduled_change(instance_ids: list[str], *, at: datetime | None = None, message_id: str | None = None,
                     region: str = "us-east-1") -> str:
    return json.dumps({
        "version": "0", "id": message_id or str(uuid.uuid4()), "detail-type": "AWS Health Event",
        "source": "aws.health", "account": ACCOUNT, "time": _stamp(at), "region": region,
        "resources": list(instance_ids),
        "detail": {
            "eventArn": f"arn:aws:health:{region}::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/{uuid.uuid4()}",
            "service": "EC2", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "eventTypeCategory": "scheduledChange",
            "eventDescription": [{"language": "en_US", "latestDescription": "Scheduled for retirement."}],
            "affectedEntities": [{"entityValue": i} for i in instance_ids],
        },
    })
