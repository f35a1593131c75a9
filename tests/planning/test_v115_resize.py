"""In-place pod resize in the simulation (kube-scheduler's UseStatusResources, which Karpenter's resources.Ceiling
sets: kubernetes-sigs/karpenter#3065; RFC kubernetes-sigs/karpenter#3037 Part 1; docs/semantics.md §3.5).

A container whose status reports `resources` counts max(spec requests, status.resources.requests,
allocatedResources); with an Infeasible resize kube counts the status alone. A move whose pods would not fit once
the kubelet holds what it holds is not taken.
"""

from __future__ import annotations

import copy
from typing import Any

from planning_factory import AT, OLD, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import parse_pod
from planning.planner.plan import plan
from planning.pod_requests import Requests, pod_requests
from planning.scheduling.node_filters import feasible_nodes

GI = 1024 ** 3
M5 = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
      {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}]


def resized(p: dict[str, Any], spec_cpu: str, status_cpu: str, allocated_cpu: str,
            condition: tuple[str, str] | None = ("PodResizeInProgress", "")) -> dict[str, Any]:
    """`p` after a resize: its spec asks `spec_cpu`, its status reports `status_cpu` applied and
    `allocated_cpu` allocated, with a resize condition (type, reason)."""
    out = copy.deepcopy(p)
    c = out["spec"]["containers"][0]
    c["resources"]["requests"]["cpu"] = spec_cpu
    mem = c["resources"]["requests"]["memory"]
    out["status"]["containerStatuses"] = [{"name": c["name"], "resources": {"requests": {"cpu": status_cpu,
                                                                                          "memory": mem}},
                                           "allocatedResources": {"cpu": allocated_cpu, "memory": mem}}]
    if condition is not None:
        out["status"]["conditions"].append({"type": condition[0], "status": "True", "reason": condition[1]})
    return out


def test_allocated_larger_than_spec_counts_the_larger() -> None:
    p = resized(pod("z-1", "b", cpu="1"), spec_cpu="1", status_cpu="1", allocated_cpu="3")
    assert parse_pod(p).cpu == 3.0
    assert pod_requests(p["spec"], p["status"]) == Requests(3.0, 512 * 1024 ** 2, 0)


def test_spec_larger_than_allocated_counts_the_spec() -> None:
    """A resize up not yet applied: the kubelet will hold the spec once it does."""
    p = resized(pod("z-1", "b"), spec_cpu="3", status_cpu="1", allocated_cpu="1",
                condition=("PodResizePending", "Deferred"))
    assert parse_pod(p).cpu == 3.0


def test_actual_status_resources_count_too() -> None:
    p = resized(pod("z-1", "b"), spec_cpu="1", status_cpu="2", allocated_cpu="1", condition=None)
    assert parse_pod(p).cpu == 2.0


def test_without_status_resources_the_spec_counts() -> None:
    p = pod("z-1", "b", cpu="1")
    p["status"]["containerStatuses"] = [{"name": "c", "allocatedResources": {"cpu": "3"}}]  # no `resources`
    assert parse_pod(p).cpu == 1.0  # kube reads a status only when it reports resources


def test_an_infeasible_resize_counts_the_status_in_kube_and_the_larger_in_the_simulation() -> None:
    """kube-scheduler counts an Infeasible resize at what the pod holds (the spec will never apply on its node);
    the simulation keeps the spec too, as a pod it moves is recreated at its spec (docs/semantics.md §3.5)."""
    p = resized(pod("z-1", "b"), spec_cpu="6", status_cpu="1", allocated_cpu="1",
                condition=("PodResizePending", "Infeasible"))
    assert pod_requests(p["spec"], p["status"]).cpu == 1.0
    assert parse_pod(p).cpu == 6.0
    legacy = copy.deepcopy(p)  # before 1.33 the API said so in status.resize
    legacy["status"]["conditions"] = legacy["status"]["conditions"][:1]
    legacy["status"]["resize"] = "Infeasible"
    assert pod_requests(legacy["spec"], legacy["status"]).cpu == 1.0


def test_a_sidecar_counts_its_status_and_a_plain_init_container_its_spec() -> None:
    spec = {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                               {"name": "init", "resources": {"requests": {"cpu": "1"}}}]}
    status = {"containerStatuses": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
              "initContainerStatuses": [
                  {"name": "side", "resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "2"}},
                  {"name": "init", "resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "9"}}]}
    assert pod_requests(spec, status).cpu == 3.0  # app 1 + sidecar 2; the init container's 9 is not read


def _cluster(z: dict[str, Any]) -> list[Any]:
    """a (candidate): w-1 asks 2 cpu. b (the only destination, 4 cpu): z-1 plus b's own 1-cpu pod. Only m5.xlarge
    and m5.2xlarge launch, so no replacement is cheaper than a: a goes only if w-1 fits on b."""
    return [nodepool(requirements=M5), node_and_claim("a", "m5.xlarge", last_pod_event=OLD),
            pod("w-1", "a", cpu="2", memory="1Gi"), node_and_claim("b", "m5.xlarge", last_pod_event=OLD),
            pod("k-1", "b", cpu="500m", memory="1Gi"), z]


def _moves(result: Any) -> list[tuple[str, list[str]]]:
    return [(c.method, sorted(c.nodes)) for c in result.commands]


def test_a_move_that_fits_on_spec_requests_but_not_on_what_the_kubelet_holds_is_refused() -> None:
    """z-1 is being resized down from 3 cpu to 1 (PodResizeInProgress): on its spec b has room for w-1, but the
    kubelet still holds 3 cpu, so kube-scheduler would leave w-1 pending; the consolidation is not taken."""
    z = pod("z-1", "b", cpu="1", memory="1Gi")
    assert _moves(plan(snapshot(*_cluster(z)), AT)) != []  # the premise: on spec requests alone a goes
    z_resizing = resized(z, spec_cpu="1", status_cpu="3", allocated_cpu="3")
    assert _moves(plan(snapshot(*_cluster(z_resizing)), AT)) == []


def test_a_moved_pod_counts_its_pending_resize_target() -> None:
    """The candidate's own pod has a resize up pending (Deferred, spec 3 cpu, holds 1): moved, it is recreated
    at 3 cpu, which b cannot take; counted at what it holds, it would fit, and the move would be undone."""
    w = resized(pod("w-1", "a", cpu="1", memory="1Gi"), spec_cpu="3", status_cpu="1", allocated_cpu="1",
                condition=("PodResizePending", "Deferred"))
    objs = _cluster(pod("z-1", "b", cpu="1500m", memory="1Gi"))  # b has 2 cpu free
    objs[2] = w
    assert _moves(plan(snapshot(*objs), AT)) == []
    objs[2] = resized(w, spec_cpu="1", status_cpu="1", allocated_cpu="1", condition=None)
    assert _moves(plan(snapshot(*objs), AT)) == [("SingleNodeConsolidation", ["a"])]  # at 1 cpu it goes


def test_no_consolidate_then_no_fit_loop() -> None:
    """The loop a spec-only simulation makes: it moves w-1 onto b while z-1 still holds its old allocation,
    kube-scheduler finds no room for w-1 there (it stays pending and a node is launched for it), z-1's resize
    ends, and the new node is consolidated again. With the status counted the dry run takes no move until the
    resize is done, then one move, after which kube-scheduler has room for w-1 and nothing else changes."""
    z = pod("z-1", "b", cpu="1", memory="1Gi")
    z_resizing = resized(z, spec_cpu="1", status_cpu="3", allocated_cpu="3")
    spec_only = copy.deepcopy(z_resizing)
    del spec_only["status"]["containerStatuses"]
    moved = plan(snapshot(*_cluster(spec_only)), AT)
    assert _moves(moved) == [("SingleNodeConsolidation", ["a"])]
    objs = [o for x in _cluster(z_resizing) for o in (x if isinstance(x, list) else [x])]
    nodes = [o for o in objs if o["kind"] == "Node" and o["metadata"]["name"] == "b"]
    bound = [o for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName") == "b"]
    w = next(o for o in objs if o["kind"] == "Pod" and o["metadata"]["name"] == "w-1")
    assert feasible_nodes({**w, "spec": {**w["spec"], "nodeName": ""}}, nodes, bound) == []  # kube: no room

    assert plan(snapshot(*_cluster(z_resizing)), AT, until_stable=True).commands == []
    done = resized(z, spec_cpu="1", status_cpu="1", allocated_cpu="1", condition=None)
    stable = plan(snapshot(*_cluster(done)), AT, until_stable=True)
    assert _moves(stable) == [("SingleNodeConsolidation", ["a"])]
    assert feasible_nodes({**w, "spec": {**w["spec"], "nodeName": ""}}, nodes,
                          [done if o["metadata"]["name"] == "z-1" else o for o in bound]) == ["b"]
