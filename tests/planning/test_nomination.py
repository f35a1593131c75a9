"""Nomination and pending pods in every disruption decision (docs/semantics.md §3.1, §3.4; Karpenter v1.14
`StateNode.Nominate`, `SimulateScheduling`): capacity launched for pending pods is not taken before they bind."""

from __future__ import annotations

from datetime import timedelta

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from api.events import EventReason
from planning.disruption.nomination import NOMINATED, NominatedKind, is_nominated, nominations, window
from planning.planner.plan import plan

NOMINATED_NOW = {L.NOMINATED_UNTIL_ANNOTATION: ts(AT + timedelta(seconds=15))}
NOMINATION_PAST = {L.NOMINATED_UNTIL_ANNOTATION: ts(AT - timedelta(seconds=1))}


def _blocked(result, node: str) -> str | None:
    return next((b.reason for b in result.blocked if b.node == node), None)


def _disrupted(result) -> set[str]:
    return {n for c in result.commands for n in c.nodes}


# ---- the window and what to write -------------------------------------------------------------------------------

def test_window_is_karpenters_twice_the_batch_max_at_least_ten_seconds():
    assert window(10.0) == timedelta(seconds=20)
    assert window(2.0) == timedelta(seconds=10)


def test_is_nominated_reads_node_or_claim_and_ignores_garbage():
    assert is_nominated({}, NOMINATED_NOW, AT)
    assert is_nominated(NOMINATED_NOW, None, AT)
    assert not is_nominated({}, NOMINATION_PAST, AT)
    assert not is_nominated({L.NOMINATED_UNTIL_ANNOTATION: "soon"}, {}, AT)


def test_nominations_write_on_the_claim_else_the_node_and_skip_fresh_marks():
    span = window()
    objects = {("NodeClaim", "c-1"): {"metadata": {}},
               ("NodeClaim", "c-2"): {"metadata": {"annotations": {
                   L.NOMINATED_UNTIL_ANNOTATION: ts(AT + timedelta(seconds=18))}}},
               ("NodeClaim", "c-3"): {"metadata": {"annotations": {
                   L.NOMINATED_UNTIL_ANNOTATION: ts(AT + timedelta(seconds=5))}}},
               ("Node", "bare"): {"metadata": {}}}
    got = nominations(["n-1", "c-2", "c-3", "bare", "gone"], {"n-1": "c-1"}, objects, AT, span)
    assert [(n.kind, n.name) for n in got] == [(NominatedKind.NODE, "bare"), (NominatedKind.NODE_CLAIM, "c-1"),
                                               (NominatedKind.NODE_CLAIM, "c-3")]
    assert got[1].patch() == {"metadata": {"annotations": {L.NOMINATED_UNTIL_ANNOTATION: ts(AT + span)}}}


# ---- a nominated node is no candidate ---------------------------------------------------------------------------

def test_an_empty_node_is_deleted_when_nothing_nominated_it():
    result = plan(snapshot(nodepool(), node_and_claim("fresh")), AT)
    assert _disrupted(result) == {"fresh"}


def test_a_nominated_empty_node_is_blocked_with_karpenters_words_and_events():
    result = plan(snapshot(nodepool(), node_and_claim("fresh", claim_annotations=NOMINATED_NOW)), AT)
    assert result.commands == []
    assert _blocked(result, "fresh") == NOMINATED
    reasons = {(e.kind, e.reason) for e in result.events if e.name == "fresh"}
    assert ("Node", EventReason.DISRUPTION_BLOCKED) in reasons
    assert ("Node", EventReason.UNCONSOLIDATABLE) in reasons


def test_a_lapsed_nomination_blocks_nothing():
    result = plan(snapshot(nodepool(), node_and_claim("fresh", node_annotations=NOMINATION_PAST)), AT)
    assert _disrupted(result) == {"fresh"}


def test_a_nominated_node_is_not_drifted_either():
    pool = nodepool()
    objs = [pool, node_and_claim("old", claim_annotations={**NOMINATED_NOW, L.TEMPLATE_HASH_ANNOTATION: "stale"}),
            pod("app-1", "old")]
    result = plan(snapshot(*objs), AT)
    assert "old" not in _disrupted(result)
    assert _blocked(result, "old") == NOMINATED


# ---- pending pods keep the capacity they fit on -----------------------------------------------------------------

def test_emptiness_keeps_the_node_a_pending_pod_fits_on_and_names_the_pod():
    objs = [nodepool(), node_and_claim("fresh", "m5.xlarge"), pod("web-1", None, "3", "8Gi")]
    result = plan(snapshot(*objs), AT)
    assert result.commands == []
    assert _blocked(result, "fresh") == "pending pod default/web-1 would lose the capacity it fits on (node fresh)"


def test_emptiness_deletes_one_of_two_empty_nodes_when_one_pending_pod_needs_only_one():
    objs = [nodepool(), node_and_claim("a", "m5.xlarge"), node_and_claim("b", "m5.xlarge"),
            pod("web-1", None, "3", "8Gi")]
    result = plan(snapshot(*objs), AT)
    assert len(_disrupted(result)) == 1


def test_emptiness_ignores_a_pending_pod_that_never_fit_there():
    """A pending pod too big for the empty node loses nothing when it goes: its capacity is the provisioner's."""
    objs = [nodepool(), node_and_claim("small", "m5.large"), pod("big-1", None, "14", "40Gi")]
    assert _disrupted(plan(snapshot(*objs), AT)) == {"small"}


def test_emptiness_ignores_pending_daemonset_pods():
    objs = [nodepool(), node_and_claim("a", "m5.xlarge"), pod("ds-1", None, "100m", "64Mi", owner="DaemonSet")]
    assert _disrupted(plan(snapshot(*objs), AT)) == {"a"}


def test_consolidation_does_not_take_the_room_a_pending_pod_fits_on():
    """Node `a`'s pods fit on `b`, but a pending pod fits only on `a` as it is: moving away from `a` would strand it."""
    pool = nodepool()
    base = [pool, node_and_claim("a", "m5.2xlarge"), node_and_claim("b", "m5.2xlarge"),
            pod("x-1", "a", "1", "2Gi"), pod("y-1", "b", "6", "24Gi")]
    assert "a" in _disrupted(plan(snapshot(*base), AT))
    result = plan(snapshot(*base, pod("web-1", None, "6", "20Gi")), AT)
    assert "a" not in _disrupted(result)
    assert (_blocked(result, "a") or "").startswith("pending pod default/web-1 would lose the capacity")


# ---- the pods of deleting nodes keep the room reserved for them -------------------------------------------------

def _deleting(name: str, itype: str = "m5.xlarge") -> list[dict]:
    node, claim = node_and_claim(name, itype)
    claim["metadata"]["deletionTimestamp"] = ts(AT)
    return [node, claim]


def test_emptiness_keeps_the_node_a_deleting_nodes_pods_are_planned_onto():
    """A node launched for the pods of a node drained behind a PDB stays empty until the drain's deadline: it is
    kept for them, as Karpenter's SimulateScheduling requires every deleting node's pod to schedule."""
    objs = [nodepool(), _deleting("old"), pod("db-1", "old", "3", "8Gi"), node_and_claim("new", "m5.xlarge")]
    result = plan(snapshot(*objs), AT)
    assert "new" not in _disrupted(result)
    assert _blocked(result, "new") == "node new holds the room planned for the pods of nodes being deleted"


def test_emptiness_deletes_an_empty_node_the_deleting_pods_do_not_need():
    objs = [nodepool(), _deleting("old"), pod("db-1", "old", "1", "2Gi"), node_and_claim("new", "m5.xlarge"),
            node_and_claim("spare", "m5.xlarge")]
    assert len(_disrupted(plan(snapshot(*objs), AT)) & {"new", "spare"}) == 1


def test_consolidation_does_not_take_the_room_reserved_for_a_deleting_nodes_pods():
    base = [nodepool(), node_and_claim("a", "m5.2xlarge"), node_and_claim("b", "m5.2xlarge"),
            pod("x-1", "a", "1", "2Gi"), pod("y-1", "b", "3500m", "4Gi")]
    assert "a" in _disrupted(plan(snapshot(*base), AT))
    result = plan(snapshot(*base, _deleting("old"), pod("db-1", "old", "5", "8Gi")), AT)
    assert "a" not in _disrupted(result)
