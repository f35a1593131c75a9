"""The disruption pass tells each pod with a do-not-disrupt duration (or a value that is none) what Karpenter's
IsDoNotDisruptActive tells it (pkg/utils/pod/scheduling.go): the instant it ends, that it has, or that the value is
ignored; "true" says nothing."""

from __future__ import annotations

from datetime import timedelta

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.planner.plan import plan


def test_each_pod_gets_the_event_its_annotation_calls_for() -> None:
    def dnd(value: str) -> dict[str, str]:
        return {L.DO_NOT_DISRUPT_ANNOTATION: value}

    result = plan(snapshot(nodepool(), node_and_claim("a"), node_and_claim("b"),
                           pod("held-1", "a", annotations=dnd("10m"), start=AT - timedelta(minutes=4), ns="shop"),
                           pod("done-1", "a", annotations=dnd("1m"), start=AT - timedelta(minutes=4)),
                           pod("typo-1", "b", annotations=dnd("10 minutes")),
                           pod("pinned-1", "b", annotations=dnd("true")), pod("plain-1", "b")), AT)
    got = {(e.namespace, e.name): (e.reason, e.type) for e in result.events if e.kind == "Pod"}
    assert got == {("shop", "held-1"): ("DoNotDisruptUntil", "Normal"),
                   ("default", "done-1"): ("DoNotDisruptGracePeriodElapsed", "Normal"),
                   ("default", "typo-1"): ("InvalidDoNotDisruptAnnotation", "Warning")}
    (until,) = [e.message for e in result.events if e.name == "held-1"]
    assert until.endswith((AT + timedelta(minutes=6)).strftime("%Y-%m-%dT%H:%M:%SZ"))
