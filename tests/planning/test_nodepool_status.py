"""The NodePool status as Karpenter's nodepool controllers decide it (planning/lifecycle/nodepool_status.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from api.budgets import compute_budget_rows
from planning.lifecycle import nodepool_status as nps

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
Obj = dict[str, Any]


def pool(name: str = "general", budgets: list[Obj] | None = None, generation: int = 1, **status: Any) -> Obj:
    spec: Obj = {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                        "name": "default"},
                                       "requirements": [{"key": "kubernetes.io/arch", "operator": "In",
                                                         "values": ["amd64"]}]}}}
    if budgets is not None:
        spec["disruption"] = {"budgets": budgets}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name, "generation": generation, "uid": "u-" + name}, "spec": spec,
            "status": status}


def claim(name: str, pool_name: str = "general", cpu: str = "4", memory: str = "16Gi", registered: bool = True,
          deleting: bool = False, launched: bool = True, created: datetime = NOW - timedelta(hours=1)) -> Obj:
    conds = [{"type": "Launched", "status": "True" if launched else "Unknown", "reason": "Launched",
              "lastTransitionTime": created.isoformat()},
             {"type": "Registered", "status": "True" if registered else "Unknown", "reason": "Registered",
              "lastTransitionTime": created.isoformat()}]
    if registered:
        conds.append({"type": "Initialized", "status": "True", "reason": "Initialized"})
    meta: Obj = {"name": name, "labels": {"karpenter.sh/nodepool": pool_name},
                 "creationTimestamp": created.isoformat()}
    if deleting:
        meta["deletionTimestamp"] = NOW.isoformat()
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta,
            "status": {"providerID": f"aws:///us-east-1a/i-{name}", "nodeName": name if registered else None,
                       "capacity": {"cpu": cpu, "memory": memory, "pods": "110"}, "conditions": conds}}


def node(name: str, pool_name: str = "general", cpu: str = "4", memory: str = "16Gi", ready: bool = True,
         tainted: bool = False, initialized: bool = True) -> Obj:
    labels = {"karpenter.sh/nodepool": pool_name}
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    spec: Obj = {"providerID": f"aws:///us-east-1a/i-{name}"}
    if tainted:
        spec["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "20Gi"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def ready_class(status: str = "True", generation: int = 3, **meta: Any) -> Obj:
    return {"kind": "EC2NodeClass", "metadata": {"name": "default", "generation": generation, **meta},
            "status": {"conditions": [{"type": "Ready", "status": status, "reason": "SubnetsNotFound" if status ==
                                       "False" else "Ready", "message": "no subnet matched" if status == "False"
                                       else ""}]}}


# ---- counter -----------------------------------------------------------------------------------------------


def test_resources_sum_the_capacity_of_the_pools_machines() -> None:
    claims = [claim("a"), claim("b", cpu="8", memory="32Gi"), claim("c", pool_name="gpu")]
    nodes = [node("a"), node("b", cpu="8", memory="32Gi"), node("c", pool_name="gpu", cpu="500m")]
    res = nps.pool_resources(claims, nodes)
    assert res["general"] == {"cpu": "12", "ephemeral-storage": str(40 * 2**30), "memory": str(48 * 2**30),
                              "nodes": "2", "pods": "220"}
    assert res["gpu"]["cpu"] == "500m" and res["gpu"]["nodes"] == "1"


def test_machines_marked_for_deletion_are_not_counted() -> None:
    claims = [claim("a"), claim("b", deleting=True), claim("c")]
    nodes = [node("a"), node("b"), node("c", tainted=True)]
    assert nps.pool_resources(claims, nodes)["general"]["nodes"] == "1"


def test_a_launched_claim_without_node_counts_with_its_own_capacity() -> None:
    res = nps.pool_resources([claim("a", registered=False)], [])
    assert res["general"]["cpu"] == "4" and res["general"]["nodes"] == "1"


def test_an_uninitialized_node_takes_what_it_lacks_from_its_claim() -> None:
    n = node("a", initialized=False)
    n["status"]["capacity"]["cpu"] = "0"
    assert nps.pool_resources([claim("a", cpu="4")], [n])["general"]["cpu"] == "4"


def test_a_pool_without_machines_shows_base_resources_at_zero() -> None:
    assert nps.resources_for("empty", {}) == {"cpu": "0", "ephemeral-storage": "0", "memory": "0", "pods": "0",
                                              "nodes": "0"}


def test_status_patch_writes_nodes_and_resources_then_nothing() -> None:
    p = pool()
    resources = nps.resources_for("general", nps.pool_resources([claim("a")], [node("a")]))
    decided = nps.status_conditions(p, ready_class(), None)
    patch = nps.status_patch(p, resources, decided, 3, NOW)
    assert patch is not None and patch["status"]["nodes"] == 1 and patch["status"]["resources"]["cpu"] == "4"
    assert patch["status"]["nodeClassObservedGeneration"] == 3
    written = {**p, "status": patch["status"]}
    assert nps.status_patch(written, resources, decided, 3, NOW + timedelta(minutes=1)) is None


# ---- conditions --------------------------------------------------------------------------------------------


def test_ready_when_the_class_is_ready_and_the_pool_valid() -> None:
    decided = nps.status_conditions(pool(), ready_class(), None)
    assert {t: c.status for t, c in decided.items()} == {"ValidationSucceeded": "True", "NodeClassReady": "True",
                                                         "Ready": "True"}


def test_node_class_not_ready_carries_its_reason_and_makes_the_pool_not_ready() -> None:
    decided = nps.status_conditions(pool(), ready_class("False"), None)
    assert decided["NodeClassReady"] == nps.Cond("False", "SubnetsNotFound", "no subnet matched")
    assert decided["Ready"].status == "False" and "NodeClassReady=False" in decided["Ready"].message


def test_node_class_missing_unknown_or_deleting() -> None:
    assert nps.node_class_ready(None).reason == "NodeClassNotFound"
    assert nps.node_class_ready(ready_class("Unknown")) == nps.Cond("False", "NodeClassReadinessUnknown",
                                                                    "Node Class Readiness Unknown")
    deleting = ready_class(deletionTimestamp=NOW.isoformat())
    assert nps.node_class_ready(deleting).reason == "NodeClassTerminating"


def test_validation_fails_with_the_validators_problem() -> None:
    p = pool()
    p["spec"]["template"]["spec"]["requirements"] = [{"key": "karpenter.sh/nodepool", "operator": "In",
                                                      "values": ["x"]}]
    cond = nps.validation(p)
    assert cond.status == "False" and cond.reason == "NodePoolValidationFailed" and "karpenter.sh/nodepool" in \
        cond.message


def test_transition_time_moves_only_when_the_status_changes() -> None:
    first = nps.with_conditions([], {"Ready": nps.Cond("True", "Ready")}, 2, NOW)
    again = nps.with_conditions(first, {"Ready": nps.Cond("True", "Ready")}, 2, NOW + timedelta(hours=1))
    flipped = nps.with_conditions(first, {"Ready": nps.Cond("False", "UnhealthyDependents")}, 2,
                                  NOW + timedelta(hours=1))
    assert again[0]["lastTransitionTime"] == first[0]["lastTransitionTime"]
    assert flipped[0]["lastTransitionTime"] != first[0]["lastTransitionTime"]
    assert first[0]["observedGeneration"] == 2


def test_conditions_of_other_writers_are_kept() -> None:
    theirs = {"type": "SomethingElse", "status": "True", "reason": "X"}
    assert theirs in nps.with_conditions([theirs], {"Ready": nps.Cond("True", "Ready")}, 1, NOW)


# ---- NodeRegistrationHealthy -------------------------------------------------------------------------------


def test_tracker_is_unhealthy_at_two_failures_of_four() -> None:
    t = nps.RegistrationTracker()
    assert t.status() is nps.Health.UNKNOWN
    t.record(True)
    t.record(False)
    assert t.status() is nps.Health.HEALTHY
    assert t.status(False) is nps.Health.UNHEALTHY  # dry run
    t.record(False)
    assert t.status() is nps.Health.UNHEALTHY
    for _ in range(3):
        t.record(True)
    assert t.status() is nps.Health.HEALTHY  # the failures fell out of the buffer of 4


def test_tracker_hydrates_from_the_written_condition() -> None:
    t = nps.RegistrationTracker()
    t.set(nps.Health.UNHEALTHY)
    assert t.status() is nps.Health.UNHEALTHY
    t.record(True)
    assert t.status() is nps.Health.UNHEALTHY  # 2 of 4 still failed
    t.set(nps.Health.HEALTHY)
    assert t.status() is nps.Health.HEALTHY


def test_registration_outcome_from_watch_events() -> None:
    unregistered = claim("a", registered=False, created=NOW - timedelta(minutes=20))
    registered = claim("a", created=NOW - timedelta(minutes=20))
    assert nps.registration_outcome(unregistered, registered, NOW) is True
    timed_out = {**unregistered, "metadata": {**unregistered["metadata"], "deletionTimestamp": NOW.isoformat()}}
    assert nps.registration_outcome(unregistered, timed_out, NOW) is False
    young = claim("b", registered=False, created=NOW - timedelta(minutes=2))
    young_deleted = {**young, "metadata": {**young["metadata"], "deletionTimestamp": NOW.isoformat()}}
    assert nps.registration_outcome(young, young_deleted, NOW) is None  # a user's deletion says nothing
    assert nps.registration_outcome(registered, registered, NOW) is None
    assert nps.registration_outcome(unregistered, None, NOW) is False  # gone at once: no finalizer held it
    assert nps.registration_outcome(timed_out, None, NOW) is None  # counted when it started deleting
    assert nps.registration_outcome(young, None, NOW) is None


def test_failure_reason_is_the_launchs_when_it_never_launched() -> None:
    c = claim("a", registered=False, launched=False)
    c["status"]["conditions"][0].update(status="False", reason="InsufficientCapacity", message="no capacity")
    assert nps.failure_cond(c) == nps.Cond("False", "InsufficientCapacity", "no capacity")
    assert nps.failure_cond(claim("b", registered=False)).reason == "RegistrationFailed"


def test_registration_condition_resets_when_the_pool_or_class_changes() -> None:
    healthy = {"type": "NodeRegistrationHealthy", "status": "True", "reason": "x", "observedGeneration": 1}
    p = pool(generation=1, conditions=[healthy], nodeClassObservedGeneration=3)
    assert not nps.registration_reset(p, 3)
    assert nps.registration_reset(p, 4)  # the class changed
    assert nps.registration_reset(pool(generation=2, conditions=[healthy], nodeClassObservedGeneration=3), 3)
    assert nps.registration_reset(pool(), 3)  # never written
    assert nps.registration(p, nps.Health.HEALTHY, True, None).status == "Unknown"


def test_registration_condition_follows_the_buffer() -> None:
    p = pool()
    assert nps.registration(p, nps.Health.HEALTHY, False, None) == nps.Cond("True", "NodeRegistrationHealthy")
    fail = nps.Cond("False", "RegistrationFailed", "Failed to register node")
    assert nps.registration(p, nps.Health.UNHEALTHY, False, fail) == fail
    written = pool(conditions=[{"type": "NodeRegistrationHealthy", "status": "False", "reason": "Boom",
                                "message": "m"}])
    assert nps.registration(written, nps.Health.UNHEALTHY, False, None) == nps.Cond("False", "Boom", "m")
    assert nps.registration(written, nps.Health.UNKNOWN, False, None).status == "False"  # as written


def test_ready_ignores_registration_health() -> None:
    decided = nps.status_conditions(pool(), ready_class(), nps.Cond("False", "RegistrationFailed"))
    assert decided["Ready"].status == "True" and decided["NodeRegistrationHealthy"].status == "False"


# ---- allowed disruptions -----------------------------------------------------------------------------------


def test_allowed_disruptions_per_reason_follow_the_budgets() -> None:
    p = pool(budgets=[{"nodes": "50%"}, {"nodes": "0", "reasons": ["Drifted"]}])
    claims = [claim(n) for n in "abcd"]
    nodes = [node("a"), node("b"), node("c"), node("d", ready=False)]
    value = nps.allowed_disruptions("general", compute_budget_rows([p], nodes, claims, NOW))
    assert value == "Empty=1,Drifted=0,Underutilized=1"  # 50% of 4 is 2, one NotReady node already disrupting
    assert nps.parse_allowed(value) == {"Empty": 1, "Drifted": 0, "Underutilized": 1}


def test_annotation_patch_only_on_change() -> None:
    p = pool()
    patch = nps.annotation_patch(p, "Empty=1,Drifted=1,Underutilized=1")
    assert patch == {"metadata": {"annotations": {nps.ALLOWED_DISRUPTIONS_ANNOTATION:
                                                  "Empty=1,Drifted=1,Underutilized=1"}}}
    p["metadata"]["annotations"] = patch["metadata"]["annotations"]
    assert nps.annotation_patch(p, "Empty=1,Drifted=1,Underutilized=1") is None


def test_a_pool_naming_another_providers_class_is_not_managed() -> None:
    p = pool()
    p["spec"]["template"]["spec"]["nodeClassRef"]["kind"] = "AKSNodeClass"
    assert not nps.managed(p) and nps.managed(pool())


def test_a_resource_no_node_provides_any_more_is_removed() -> None:
    p = pool(nodes=1, resources={"cpu": "4", "nvidia.com/gpu": "1", "nodes": "1"})
    patch = nps.status_patch(p, nps.resources_for("general", {}), {}, None, NOW)
    assert patch is not None and patch["status"]["resources"]["nvidia.com/gpu"] is None
    assert patch["status"]["resources"]["cpu"] == "0" and patch["status"]["nodes"] == 0
