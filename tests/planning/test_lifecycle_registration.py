"""planning/lifecycle/registration.py against docs/karpenter-reference.md §4 (Karpenter's
lifecycle/registration.go and registration_test.go)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from api import labels as L
from planning.lifecycle.conditions import FALSE, TRUE, UNKNOWN, condition
from planning.lifecycle.registration import (
    DO_NOT_SYNC_TAINTS_LABEL,
    UNREGISTERED_TAINT_KEY,
    NotRegistered,
    node_patch,
    register,
)

NOW = datetime(2026, 11, 27, 4, 5, 0, tzinfo=UTC)
PID = "aws:///us-east-1a/i-0abc"
UNREGISTERED = {"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def claim(*, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
          taints: list[dict] | None = None, startup: list[dict] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "default-abc", "uid": "uid-1", "creationTimestamp": "2026-11-27T04:00:00Z",
                     "labels": labels if labels is not None else {"karpenter.sh/nodepool": "default"},
                     "annotations": annotations or {}},
        "spec": {"taints": taints or [], "startupTaints": startup or []},
        "status": {"providerID": PID, "conditions": [
            {"type": "Launched", "status": "True", "reason": "Launched", "message": "",
             "lastTransitionTime": "2026-11-27T04:00:10Z"}]},
    }


def node(name: str = "ip-10-0-0-1", *, labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None, taints: list[dict] | None = None,
         finalizers: list[str] | None = None, owners: list[dict] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if annotations is not None:
        meta["annotations"] = annotations
    if finalizers is not None:
        meta["finalizers"] = finalizers
    if owners is not None:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "spec": {"providerID": PID, "taints": [UNREGISTERED] if taints is None else taints}}


def applied(n: dict[str, Any], patch: dict[str, Any] | None) -> dict[str, Any]:
    """The Node after a JSON merge patch of these fields (what the API server would store)."""
    out = {"metadata": dict(n["metadata"]), "spec": dict(n["spec"])}
    for section in ("metadata", "spec"):
        for k, v in ((patch or {}).get(section) or {}).items():
            if v is None:
                out[section].pop(k, None)
            else:
                out[section][k] = v
    return out


def taint_keys(n: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in n["spec"].get("taints") or []}


# --- Node lookup ---------------------------------------------------------------------------------------------

def test_no_node_is_unknown_node_not_found() -> None:
    r = register(claim(), [], NOW)
    reg = condition({"status": {"conditions": r.conditions}}, "Registered")
    assert reg is not None and reg["status"] == UNKNOWN and reg["reason"] == NotRegistered.NODE_NOT_FOUND
    assert r.node_patch is None and r.node_name == "" and not r.taint_missing


def test_no_node_keeps_the_creation_time_as_transition() -> None:
    """Unknown -> Unknown is no transition: the 15 min registration TTL still counts from creation."""
    c = claim()
    c["status"]["conditions"].append({"type": "Registered", "status": "Unknown", "reason": "NodeNotFound",
                                      "message": "", "lastTransitionTime": "2026-11-27T04:00:00Z"})
    reg = condition({"status": {"conditions": register(c, [], NOW).conditions}}, "Registered")
    assert reg is not None and reg["lastTransitionTime"] == "2026-11-27T04:00:00Z"


def test_two_nodes_is_false_multiple_nodes_found() -> None:
    r = register(claim(), [node("a"), node("b")], NOW)
    reg = condition({"status": {"conditions": r.conditions}}, "Registered")
    assert reg is not None and reg["status"] == FALSE and reg["reason"] == NotRegistered.MULTIPLE_NODES_FOUND
    assert reg["lastTransitionTime"] == "2026-11-27T04:05:00Z"
    assert "2" in reg["message"] and PID in reg["message"]
    assert r.node_patch is None and r.node_name == ""


# --- One node: what is synced --------------------------------------------------------------------------------

def test_one_node_registers_with_finalizer_owner_and_registered_label() -> None:
    r = register(claim(), [node()], NOW)
    reg = condition({"status": {"conditions": r.conditions}}, "Registered")
    assert reg is not None and reg["status"] == TRUE and reg["lastTransitionTime"] == "2026-11-27T04:05:00Z"
    assert r.node_name == "ip-10-0-0-1"
    assert not r.taint_missing
    meta = r.node_patch["metadata"]  # type: ignore[index]
    assert meta["finalizers"] == [L.TERMINATION_FINALIZER]
    assert meta["ownerReferences"] == [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                                        "name": "default-abc", "uid": "uid-1", "blockOwnerDeletion": True}]
    assert "controller" not in meta["ownerReferences"][0]
    assert meta["labels"][L.REGISTERED_LABEL] == "true"
    assert meta["labels"]["karpenter.sh/nodepool"] == "default"


def test_finalizer_and_owner_reference_are_added_once() -> None:
    c = claim()
    other_owner = {"apiVersion": "v1", "kind": "Thing", "name": "x", "uid": "uid-other"}
    n = node(finalizers=["other/finalizer", L.TERMINATION_FINALIZER],
             owners=[other_owner, {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "default-abc",
                                   "uid": "uid-1", "blockOwnerDeletion": True}])
    patch = node_patch(n, c)
    assert patch is not None
    assert "finalizers" not in patch["metadata"] and "ownerReferences" not in patch["metadata"]
    after = applied(n, patch)
    assert after["metadata"]["finalizers"].count(L.TERMINATION_FINALIZER) == 1
    # a second pass over the patched Node changes nothing
    assert node_patch(after, c) is None


def test_existing_finalizers_and_owners_are_kept() -> None:
    other_owner = {"apiVersion": "v1", "kind": "Thing", "name": "x", "uid": "uid-other"}
    patch = node_patch(node(finalizers=["other/finalizer"], owners=[other_owner]), claim())
    assert patch is not None
    assert patch["metadata"]["finalizers"] == ["other/finalizer", L.TERMINATION_FINALIZER]
    assert patch["metadata"]["ownerReferences"][0] == other_owner
    assert patch["metadata"]["ownerReferences"][1]["uid"] == "uid-1"


def test_labels_and_annotations_merge_with_claim_values_winning() -> None:
    c = claim(labels={"karpenter.sh/nodepool": "default", "team": "claim", "only-claim": "1"},
              annotations={"note": "claim", "karpenter.sh/do-not-disrupt": "true"})
    n = node(labels={"team": "node", "only-node": "2"}, annotations={"note": "node", "kubeadm": "x"})
    meta = node_patch(n, c)["metadata"]  # type: ignore[index]
    assert meta["labels"] == {"team": "claim", "only-node": "2", "only-claim": "1",
                              "karpenter.sh/nodepool": "default", L.REGISTERED_LABEL: "true"}
    assert meta["annotations"] == {"note": "claim", "kubeadm": "x", "karpenter.sh/do-not-disrupt": "true"}


def test_claim_taints_and_startup_taints_merge_by_key_and_effect() -> None:
    c = claim(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                      {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}],
              startup=[{"key": "example.com/agent", "effect": "NoSchedule"}])
    # the Node already has dedicated:NoSchedule (another value): same key+effect, so not added twice
    n = node(taints=[UNREGISTERED, NOT_READY, {"key": "dedicated", "value": "other", "effect": "NoSchedule"}])
    taints = node_patch(n, c)["spec"]["taints"]  # type: ignore[index]
    assert taints == [NOT_READY, {"key": "dedicated", "value": "other", "effect": "NoSchedule"},
                      {"key": "dedicated", "value": "gpu", "effect": "NoExecute"},
                      {"key": "example.com/agent", "effect": "NoSchedule"}]


def test_taint_in_both_taints_and_startup_taints_is_added_once() -> None:
    t = {"key": "example.com/x", "effect": "NoSchedule"}
    taints = node_patch(node(), claim(taints=[t], startup=[dict(t)]))["spec"]["taints"]  # type: ignore[index]
    assert taints == [t]


def test_do_not_sync_taints_skips_claim_taints_but_still_removes_unregistered() -> None:
    c = claim(taints=[{"key": "dedicated", "effect": "NoSchedule"}],
              startup=[{"key": "example.com/agent", "effect": "NoSchedule"}])
    n = node(labels={DO_NOT_SYNC_TAINTS_LABEL: "true"}, taints=[UNREGISTERED, NOT_READY])
    patch = node_patch(n, c)
    assert patch is not None
    assert patch["spec"]["taints"] == [NOT_READY]
    assert patch["metadata"]["labels"][L.REGISTERED_LABEL] == "true"


def test_do_not_sync_taints_other_than_true_still_syncs() -> None:
    c = claim(taints=[{"key": "dedicated", "effect": "NoSchedule"}])
    n = node(labels={DO_NOT_SYNC_TAINTS_LABEL: "false"})
    assert taint_keys(applied(n, node_patch(n, c))) == {("dedicated", "NoSchedule")}


def test_only_taint_is_unregistered_so_taints_are_cleared() -> None:
    patch = node_patch(node(taints=[UNREGISTERED]), claim())
    assert patch is not None and patch["spec"] == {"taints": None}


def test_unregistered_taint_present_means_not_missing() -> None:
    assert not register(claim(), [node()], NOW).taint_missing


def test_taint_missing_when_neither_taint_nor_registered_label() -> None:
    r = register(claim(), [node(taints=[NOT_READY])], NOW)
    assert r.taint_missing
    reg = condition({"status": {"conditions": r.conditions}}, "Registered")
    assert reg is not None and reg["status"] == TRUE  # registration still completes
    assert r.node_patch is not None and r.node_patch["metadata"]["labels"][L.REGISTERED_LABEL] == "true"


def test_registered_label_without_taint_is_not_missing() -> None:
    r = register(claim(), [node(labels={L.REGISTERED_LABEL: "true"}, taints=[])], NOW)
    assert not r.taint_missing


def test_only_the_no_execute_unregistered_taint_counts() -> None:
    """Karpenter matches `karpenter.sh/unregistered:NoExecute` by key and effect; a NoSchedule taint of that key
    (a user's startup taint) is neither the registration signal nor removed by registration."""
    user = {"key": UNREGISTERED_TAINT_KEY, "effect": "NoSchedule"}
    n = node(taints=[user])
    r = register(claim(), [n], NOW)
    assert r.taint_missing
    assert taint_keys(applied(n, r.node_patch)) == {(UNREGISTERED_TAINT_KEY, "NoSchedule")}


def test_already_registered_node_gets_no_patch() -> None:
    c = claim(labels={"karpenter.sh/nodepool": "default"}, annotations={"a": "1"},
              taints=[{"key": "dedicated", "effect": "NoSchedule"}])
    n = node(taints=[UNREGISTERED])
    after = applied(n, node_patch(n, c))
    assert node_patch(after, c) is None
    c["status"]["conditions"] = register(c, [n], NOW).conditions
    again = register(c, [after], datetime(2026, 11, 27, 4, 9, 0, tzinfo=UTC))
    assert again.node_patch is None
    reg = condition({"status": {"conditions": again.conditions}}, "Registered")
    assert reg is not None and reg["lastTransitionTime"] == "2026-11-27T04:05:00Z"


def test_deleting_node_gets_no_new_finalizer() -> None:
    n = node()
    n["metadata"]["deletionTimestamp"] = "2026-11-27T04:04:00Z"
    patch = node_patch(n, claim())
    assert patch is not None and "finalizers" not in patch["metadata"]
