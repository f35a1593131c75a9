"""Cut cached objects down to the fields decisions read, so a watch cache of 72k pods stays bounded.

A live Pod carries managedFields, container images, env, probes, mounts and container statuses: several
kilobytes that `planning/` (cluster.py `parse_pod`, lifecycle/drain.py) never reads. Pods keep exactly what the
scheduling simulation and the drain read; every kind loses managedFields and the kubectl last-applied
copy; Nodes also lose `status.images` (dozens of image names per node). Input objects are never modified.
A container status stays only where an in-place resize makes it count (its resources differ from the spec's).
"""

from __future__ import annotations

from typing import Any

from runtime.shared_values import SharedValues

Obj = dict[str, Any]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
POD_METADATA = ("name", "namespace", "uid", "labels", "annotations", "ownerReferences", "deletionTimestamp",
                "deletionGracePeriodSeconds", "creationTimestamp", "resourceVersion")
# parse_pod: placement, requests, priority; lifecycle/drain.py: priorityClassName, grace, tolerations (disrupted taint)
POD_SPEC = ("nodeName", "nodeSelector", "affinity", "tolerations", "topologySpreadConstraints", "priority",
            "priorityClassName", "terminationGracePeriodSeconds", "overhead")
CONTAINER_FIELDS = ("name", "resources", "restartPolicy")  # restartPolicy: an init container that is a sidecar
CONDITION_FIELDS = ("type", "status", "reason")  # Ready decides readiness
# ... and when Ready and PodScheduled turned: Karpenter's pod startup and bound durations (runtime/karpenter_state.py)
TIMED_CONDITIONS = frozenset({"Ready", "PodScheduled"})
POD_STATUS = ("phase", "startTime", "resize")  # resize: Infeasible on clusters before 1.33 (pod_requests.py)
RESIZE_CONDITIONS = frozenset({"PodResizePending", "PodResizeInProgress"})
# what a pod's copy holds once (runtime/shared_values.py); name, uid and resourceVersion are each pod's own
UNIQUE_METADATA = frozenset({"name", "uid", "resourceVersion"})
SHARED = SharedValues()


def _metadata(meta: Obj, keep: tuple[str, ...] | None = None) -> Obj:
    """metadata without managedFields and the last-applied annotation (only `keep` keys when given)."""
    out = {k: v for k, v in meta.items() if k != "managedFields" and (keep is None or k in keep)}
    annotations = out.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        out["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return out


def _container(c: Obj) -> Obj:
    out = {k: c[k] for k in CONTAINER_FIELDS if k in c}
    resources = out.get("resources")
    if resources:  # requests and limits; resize policies and DRA claims are not read
        out["resources"] = {k: v for k, v in resources.items() if k in ("requests", "limits")}
    return out


def _pod_volumes(volumes: list[Obj]) -> list[Obj]:
    """Only volumes backed by a PersistentVolumeClaim: the drain waits for their attachments to detach."""
    return [v for v in volumes if "persistentVolumeClaim" in v or "ephemeral" in v]


def _condition(c: Obj) -> Obj:
    out = {k: c[k] for k in CONDITION_FIELDS if k in c}
    if c.get("type") in TIMED_CONDITIONS and "lastTransitionTime" in c:
        out["lastTransitionTime"] = c["lastTransitionTime"]
    return out


def _container_statuses(spec: Obj, status: Obj, key: str) -> list[Obj]:
    """The statuses an in-place resize makes count (planning/pod_requests.py): their resources and allocation, kept
    only when they differ from the spec's requests or a resize is pending, since a status that repeats the spec
    changes nothing and every running container of a 1.33+ cluster reports one."""
    resizing = any(c.get("type") in RESIZE_CONDITIONS for c in status.get("conditions") or ()) or "resize" in status
    wanted = {c.get("name"): (c.get("resources") or {}).get("requests")
              for k in ("containers", "initContainers") for c in spec.get(k) or ()}
    out = []
    for cs in status.get(key) or ():
        res = cs.get("resources")
        if res is None:
            continue
        requests, allocated = res.get("requests"), cs.get("allocatedResources")
        spec_requests = wanted.get(cs.get("name"))
        if resizing or requests != spec_requests or (allocated is not None and allocated != spec_requests):
            kept: Obj = {"name": cs.get("name"), "resources": {"requests": requests} if requests else {}}
            if allocated is not None:
                kept["allocatedResources"] = allocated
            out.append(kept)
    return out


def trim_pod(pod: Obj) -> Obj:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    new_spec: Obj = {k: spec[k] for k in POD_SPEC if k in spec}
    for key in ("containers", "initContainers"):
        if spec.get(key):
            new_spec[key] = [_container(c) for c in spec[key]]
    volumes = _pod_volumes(spec.get("volumes") or [])
    if volumes:
        new_spec["volumes"] = volumes
    out: Obj = {"apiVersion": pod.get("apiVersion", "v1"), "kind": pod.get("kind", "Pod"),
                "metadata": _metadata(pod.get("metadata") or {}, POD_METADATA), "spec": new_spec}
    if status:
        new_status: Obj = {k: status[k] for k in POD_STATUS if k in status}
        if status.get("conditions"):
            new_status["conditions"] = [_condition(c) for c in status["conditions"]]
        for key in ("containerStatuses", "initContainerStatuses"):
            kept = _container_statuses(spec, status, key)
            if kept:
                new_status[key] = kept
        out["status"] = new_status
    return _shared_pod(out)


def _shared_pod(pod: Obj) -> Obj:
    """The trimmed pod with the values other pods repeat (labels, owner, requests, conditions, strings) shared."""
    share = SHARED.share
    meta = {k: v if k in UNIQUE_METADATA else share(v) for k, v in pod["metadata"].items()}
    out: Obj = {"apiVersion": share(pod["apiVersion"]), "kind": share(pod["kind"]), "metadata": meta,
                "spec": {k: share(v) for k, v in pod["spec"].items()}}
    if "status" in pod:
        out["status"] = {k: share(v) for k, v in pod["status"].items()}
    return out


def trim_node(node: Obj) -> Obj:
    out = {**node, "metadata": _metadata(node.get("metadata") or {})}
    status = node.get("status")
    if status and "images" in status:
        out["status"] = {k: v for k, v in status.items() if k != "images"}
    return out


TEMPLATE_KINDS = frozenset({"PodTemplate", "Deployment", "StatefulSet", "ReplicaSet"})


def trim_template_owner(obj: Obj) -> Obj:
    """A PodTemplate or workload: its pod template cut as a pod is (a CapacityBuffer's chunk shape), its replicas
    and selector kept (percentage buffers; default topology spread)."""
    out = {**obj, "metadata": _metadata(obj.get("metadata") or {})}
    holder = "template" if obj.get("kind") == "PodTemplate" else "spec"
    outer = obj.get(holder) or {}
    template = outer.get("template") if holder == "spec" else outer
    if not isinstance(template, dict):
        return out
    cut = trim_pod({"metadata": template.get("metadata") or {}, "spec": template.get("spec") or {}})
    cut = {"metadata": cut["metadata"], "spec": cut["spec"]}
    out[holder] = cut if holder == "template" else {**outer, "template": cut}
    return out


def trim(kind: str, obj: Obj) -> Obj:
    """`obj` (a `kind` as the API returns it) reduced to what decisions read; a new dict, `obj` untouched."""
    if kind == "Pod":
        return trim_pod(obj)
    if kind == "Node":
        return trim_node(obj)
    if kind in TEMPLATE_KINDS:
        return trim_template_owner(obj)
    return {**obj, "metadata": _metadata(obj.get("metadata") or {})}
