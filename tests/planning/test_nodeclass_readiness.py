"""A NodePool whose EC2NodeClass is missing or not Ready launches nothing: the planner offers no new node in it,
says why on the NodePool (Event NodeClassNotReady) and on the nodes whose replacement it would need."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import yaml

from api.snapshot import Snapshot
from planning.planner.plan import run_pass
from planning.scheduling.nodeclass_readiness import launch_blocker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AT = datetime(2026, 11, 22, 20, tzinfo=UTC)


def _snapshot(ready: str = "'True'") -> Snapshot:
    ours = "    status: 'True'\n    reason: Ready\n"  # the class's Ready condition (Nodes have Ready too)
    text = (EXAMPLES / "plan-ami-drift.yaml").read_text()
    assert text.count(ours) == 1
    text = text.replace(ours, f"    status: {ready}\n    reason: Ready\n")
    return Snapshot.from_objects([d for d in yaml.safe_load_all(text) if d])


def test_launch_blocker_names_what_is_wrong() -> None:
    snap = _snapshot()
    classes = {c.metadata.name: c for c in snap.node_classes}
    assert launch_blocker(classes, "default") is None
    assert launch_blocker(classes, "other") == "EC2NodeClass other not found"
    assert launch_blocker({}, "other") is None  # no classes at all: the older launch path, nothing blocked
    assert launch_blocker(classes, "") is None  # a nodeClassRef of another kind
    not_ready = {c.metadata.name: c for c in _snapshot("'False'").node_classes}
    assert launch_blocker(not_ready, "default") == "EC2NodeClass default not Ready: Ready"


def test_the_pass_blocks_the_drift_and_records_an_event_on_the_nodepool() -> None:
    outcome = run_pass(_snapshot("'False'"), AT)
    assert outcome.commands == []
    assert [(b.node, b.reason) for b in outcome.blocked] == [("node-a", "EC2NodeClass default not Ready: Ready")]
    pool_events = [(e.kind, e.name, e.reason, e.message) for e in outcome.events if e.kind == "NodePool"]
    assert pool_events == [("NodePool", "default", "NodeClassNotReady",
                            "no launch: EC2NodeClass default not Ready: Ready")]
    assert run_pass(_snapshot(), AT).commands  # Ready: the same node is replaced
