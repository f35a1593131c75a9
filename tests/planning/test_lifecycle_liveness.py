"""planning/lifecycle/liveness.py against docs/karpenter-reference.md §6: 5 minutes to launch
from Launched's lastTransitionTime, 15 to register from Registered's; inactive once Registered or deleting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from planning.lifecycle.liveness import LAUNCH_TTL, REGISTRATION_TTL, LivenessTimeout, expired

CREATED = datetime(2026, 11, 27, 4, 0, 0, tzinfo=UTC)


def claim(*conds: tuple[str, str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "c", "creationTimestamp": "2026-11-27T04:00:00Z"},
            "status": {"conditions": [{"type": t, "status": s, "reason": t, "message": "", "lastTransitionTime": at}
                                      for t, s, at in conds]}}


def test_ttls_are_karpenters() -> None:
    assert timedelta(minutes=5) == LAUNCH_TTL
    assert timedelta(minutes=15) == REGISTRATION_TTL


@pytest.mark.parametrize("after,want", [
    (timedelta(minutes=4, seconds=59), None),
    (timedelta(minutes=5), LivenessTimeout.LAUNCH),  # the boundary expires
    (timedelta(minutes=6), LivenessTimeout.LAUNCH),
])
def test_launch_timeout_from_creation_when_launched_is_absent(after: timedelta, want: LivenessTimeout | None) -> None:
    assert expired(claim(), CREATED + after) == want


def test_launch_timeout_counts_from_launched_transition() -> None:
    c = claim(("Launched", "Unknown", "2026-11-27T04:02:00Z"))
    assert expired(c, CREATED + timedelta(minutes=6)) is None
    assert expired(c, CREATED + timedelta(minutes=7)) is LivenessTimeout.LAUNCH


def test_launch_failure_keeps_creation_time() -> None:
    """A create error leaves Launched Unknown stamped at creation: the 5 minutes do not restart."""
    c = claim(("Launched", "Unknown", "2026-11-27T04:00:00Z"))
    assert expired(c, CREATED + timedelta(minutes=5)) is LivenessTimeout.LAUNCH


@pytest.mark.parametrize("after,want", [
    (timedelta(minutes=14, seconds=59), None),
    (timedelta(minutes=15), LivenessTimeout.REGISTRATION),
    (timedelta(hours=1), LivenessTimeout.REGISTRATION),
])
def test_registration_timeout_from_creation(after: timedelta, want: LivenessTimeout | None) -> None:
    c = claim(("Launched", "True", "2026-11-27T04:00:20Z"))
    assert expired(c, CREATED + after) == want


def test_launched_claim_is_not_held_to_the_launch_ttl() -> None:
    c = claim(("Launched", "True", "2026-11-27T04:00:20Z"), ("Registered", "Unknown", "2026-11-27T04:00:00Z"))
    assert expired(c, CREATED + timedelta(minutes=10)) is None


def test_multiple_nodes_found_counts_from_its_transition() -> None:
    c = claim(("Launched", "True", "2026-11-27T04:00:20Z"), ("Registered", "False", "2026-11-27T04:03:00Z"))
    assert expired(c, CREATED + timedelta(minutes=17, seconds=59)) is None
    assert expired(c, CREATED + timedelta(minutes=18)) is LivenessTimeout.REGISTRATION


def test_registered_claim_never_expires() -> None:
    c = claim(("Launched", "True", "2026-11-27T04:00:20Z"), ("Registered", "True", "2026-11-27T04:01:00Z"))
    assert expired(c, CREATED + timedelta(days=3)) is None


def test_deleting_claim_never_expires() -> None:
    c = claim()
    c["metadata"]["deletionTimestamp"] = "2026-11-27T04:01:00Z"
    assert expired(c, CREATED + timedelta(hours=1)) is None


def test_custom_ttls() -> None:
    c = claim(("Launched", "True", "2026-11-27T04:00:20Z"))
    assert expired(c, CREATED + timedelta(minutes=2), registration_ttl=timedelta(minutes=2)) is \
        LivenessTimeout.REGISTRATION
    assert expired(claim(), CREATED + timedelta(minutes=1), launch_ttl=timedelta(minutes=1)) is LivenessTimeout.LAUNCH
