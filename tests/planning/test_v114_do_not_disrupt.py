"""The drain honours do-not-disrupt's duration form (kubernetes-sigs/karpenter#2874, v1.12.0; docs/semantics.md §7,
§9.2): a pod annotated with a positive Go duration is not evicted until that long after its status.startTime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from planning.lifecycle import drain

AT = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)


def _pod(value: str | None, started: datetime | None) -> dict:
    meta: dict = {"name": "p", "namespace": "default", "annotations": {}}
    if value is not None:
        meta["annotations"]["karpenter.sh/do-not-disrupt"] = value
    status = {"phase": "Running"}
    if started is not None:
        status["startTime"] = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": meta, "spec": {}, "status": status}


@pytest.mark.parametrize(("value", "started", "held"), [
    ("true", AT - timedelta(days=3), True),
    ("5m", AT - timedelta(minutes=2), True),       # still within its grace period
    ("5m", AT - timedelta(minutes=5), False),      # elapsed: evictable
    ("1h30m", AT - timedelta(hours=1), True),
    ("5m", None, True),                            # no start time: held, as Karpenter (fail safe)
    ("0s", AT, False),                             # not positive: absent
    ("-1m", AT, False),
    ("soon", AT, False),                           # invalid: absent
    ("false", AT, False),
    (None, AT, False),
])
def test_the_drain_holds_a_pod_while_its_annotation_is_active(value, started, held) -> None:
    assert drain.has_do_not_disrupt(_pod(value, started), AT) is held


def test_without_a_time_only_true_holds() -> None:
    assert drain.has_do_not_disrupt(_pod("true", None))
    assert not drain.has_do_not_disrupt(_pod("5m", AT))
