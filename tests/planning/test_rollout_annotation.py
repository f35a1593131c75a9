"""A pool's drift rollout in the dry run: the NodePool's `nodeflow.dev/rollout` annotation (written by
DriftRolloutWorkflow) turns its drifted nodes into blocked ones that say the wave and the bake deadline or the
halt reason; no annotation (or a rollout that is disrupting) changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from planning_factory import AT, OLD, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from api.rollout_state import RolloutNote, RolloutNotePhase, parse_rollout_note
from planning.planner.plan import plan, run_plan

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
BAKE_UNTIL = datetime(2026, 11, 23, 16, 40, 0, 123456, tzinfo=UTC)


def _drifted(name: str) -> list[dict[str, Any]]:
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(OLD)},
            {"type": "Drifted", "status": "True", "lastTransitionTime": ts(OLD)}]
    return node_and_claim(name, conditions=cond)


def _cluster(note: RolloutNote | None) -> Any:
    annotations = {L.ROLLOUT_ANNOTATION: note.to_annotation()} if note is not None else {}
    np = nodepool(consolidate_after="Never", requirements=REQ, annotations=annotations)
    return snapshot(np, _drifted("a"), _drifted("b"), pod("x-1", "a"), pod("y-1", "b"))


def test_the_annotation_round_trips_with_the_deadline_at_whole_seconds():
    note = RolloutNote(generation="uid/h", wave=2, waves=4, phase=RolloutNotePhase.BAKING, bake_until=BAKE_UNTIL)
    text = note.to_annotation()
    assert '"bakeUntil":"2026-11-23T16:40:00Z"' in text and '"phase":"Baking"' in text
    back = parse_rollout_note(text)
    assert back is not None and back.wave == 2 and back.bake_until == BAKE_UNTIL.replace(microsecond=0)
    assert parse_rollout_note("not json") is None and parse_rollout_note(None) is None


def test_a_baking_rollout_blocks_the_pools_drifted_nodes_until_its_deadline():
    note = RolloutNote(wave=2, waves=4, phase=RolloutNotePhase.BAKING, bake_until=BAKE_UNTIL)
    result = run_plan(_cluster(note), AT)
    assert result.commands == []
    assert {b.node: b.reason for b in result.blocked} == {
        n: "drift rollout wave 2/4 baking until 2026-11-23T16:40:00Z" for n in ("a", "b")}
    public = result.to_public()["blocked"]
    assert sorted(public[0]) == ["node", "reason"]


def test_a_halted_rollout_names_the_halt_and_how_to_resume():
    note = RolloutNote(wave=1, waves=2, phase=RolloutNotePhase.HALTED,
                       halt_reason="1 replacement(s) never became Ready (max 1)")
    result = run_plan(_cluster(note), AT, until_stable=True)
    assert result.commands == []
    reasons = {b.node: b.reason for b in result.blocked}
    assert reasons["a"] == ("drift rollout halted at wave 1/2: 1 replacement(s) never became Ready (max 1) "
                            "(nodeflow rollout resume default)")
    assert set(reasons) == {"a", "b"}
    assert any(e.kind == "Node" and e.name == "a" and "drift rollout halted" in e.message.lower()
               for e in result.events)


def test_no_annotation_or_a_running_rollout_changes_nothing():
    plain = run_plan(_cluster(None), AT)
    running = run_plan(_cluster(RolloutNote(wave=1, waves=2, phase=RolloutNotePhase.RUNNING)), AT)
    unreadable = _cluster(None)
    unreadable.node_pools[0].metadata.annotations = {L.ROLLOUT_ANNOTATION: "{broken"}
    for result in (plain, running, run_plan(unreadable, AT)):
        assert [(c.method, c.nodes) for c in result.commands] == [(c.method, c.nodes) for c in plain.commands]
        assert [c.method for c in result.commands] == ["Drift"]
        assert not any("drift rollout" in b.reason for b in result.blocked)


def test_the_workers_planner_leaves_a_rollout_pool_to_its_workflow():
    """The annotation is the dry run's view: the worker's pass (plan() without rollouts) plans as before."""
    note = RolloutNote(wave=1, waves=2, phase=RolloutNotePhase.HALTED, halt_reason="x")
    assert [c.method for c in plan(_cluster(note), AT).commands] == ["Drift"]
