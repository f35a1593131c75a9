"""ReplicaSet, StatefulSet and DaemonSet controllers: evicted or deleted pods come back, daemons follow nodes."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Any

from simulator.deployments import Deployments
from simulator.patch import deep_copy
from simulator.pods import condition_true, controller_ref, is_deleting, labels, meta, pod_terminal
from simulator.replicaset_order import scale_down_order
from simulator.resources import BY_KIND, ResourceType
from simulator.scheduling import DAEMONSET_TOLERATIONS, schedulable_on
from simulator.store import Store

PODS = BY_KIND["Pod"]
NODES = BY_KIND["Node"]
CONTROLLER_KINDS = ("ReplicaSet", "StatefulSet", "DaemonSet")
# How a controller deletes a pod: the world's pod deletion (grace period, finalizers, the ledger), given
# (pod, grace seconds or None for the pod's own, cause) and returning (the pod as it now is, whether it is gone).
DeletePod = Callable[[dict[str, Any], int | None, str], tuple[dict[str, Any], bool]]


def _suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


class Controllers:
    """Keeps owned pods at their controllers' desired counts (reconciled on the world's tick). Like kube's
    controllers they see only the store, plus the world's pod deletion to scale down with."""

    def __init__(self, store: Store, delete_pod: DeletePod) -> None:
        self.store = store
        self.delete_pod = delete_pod
        self.by_uid: dict[str, tuple[ResourceType, tuple[str, str]]] = {}
        self.daemonsets: set[str] = set()
        # controllers to reconcile, in the order they changed (a controller's work queue is FIFO and keeps an item's
        # place): a ReplicaSet whose pod was evicted first creates its replacement first
        self.dirty: dict[str, None] = {}
        self.dirty_nodes: set[str] = set()  # nodes whose daemon pods need a look
        self.rng = random.Random(7)
        self.deployments = Deployments(store)

    # ---- bookkeeping -------------------------------------------------------------------------------------
    def on_change(self, rt: ResourceType, kind: str, old: dict | None, new: dict | None) -> None:
        self.deployments.on_change(rt, old, new)
        if rt.kind in CONTROLLER_KINDS:
            obj = new or old or {}
            uid = meta(obj).get("uid")
            if new is None:
                self.by_uid.pop(uid, None)
                self.daemonsets.discard(uid)
                self.dirty.pop(uid, None)
                return
            self.by_uid[uid] = (rt, (meta(new).get("namespace") or "", meta(new)["name"]))
            if rt.kind == "DaemonSet":
                self.daemonsets.add(uid)
            if old is None or old.get("spec") != new.get("spec"):
                self.dirty.setdefault(uid)
        elif rt is PODS:
            gone = new is None or (is_deleting(new) and not is_deleting(old or {})) or (
                pod_terminal(new) and not pod_terminal(old or {}))
            if gone:
                ref = controller_ref(new or old or {})
                if ref and ref.get("uid") in self.daemonsets:
                    node = ((new or old or {}).get("spec") or {}).get("nodeName")
                    if node:
                        self.dirty_nodes.add(node)
                elif ref and ref.get("uid") in self.by_uid:
                    self.dirty.setdefault(ref["uid"])
            elif new is not None and (old is None or condition_true(old, "Ready") != condition_true(new, "Ready")):
                ref = controller_ref(new)
                if ref and ref.get("kind") == "ReplicaSet" and ref.get("uid") in self.by_uid:
                    self.dirty.setdefault(ref["uid"])  # its status counts ready pods
        elif rt is NODES and new is not None and (old is None or labels(old) != labels(new)
                                                  or old.get("spec") != new.get("spec")):
            self.dirty_nodes.add(meta(new)["name"])

    def _get(self, uid: str) -> tuple[ResourceType, dict[str, Any]] | None:
        entry = self.by_uid.get(uid)
        if entry is None:
            return None
        obj = self.store.get(entry[0], *entry[1])
        return (entry[0], obj) if obj is not None else None

    def scale_of(self, namespace: str, ref: dict[str, Any] | None) -> int | None:
        """Desired replicas of a scalable controller (None for DaemonSets and unknown owners)."""
        if not ref:
            return None
        found = self._get(ref.get("uid") or "")
        if found is None or found[0].kind == "DaemonSet":
            return None
        replicas = (found[1].get("spec") or {}).get("replicas")
        return 1 if replicas is None else int(replicas)

    @staticmethod
    def is_daemon_pod(pod: dict[str, Any]) -> bool:
        ref = controller_ref(pod)
        return bool(ref and ref.get("kind") == "DaemonSet")

    # ---- reconcile ---------------------------------------------------------------------------------------
    def reconcile(self) -> None:
        self.deployments.reconcile()
        if self.dirty_nodes:
            nodes = [n for n in (self.store.get(NODES, "", name) for name in self.dirty_nodes) if n]
            self.dirty_nodes.clear()
            for uid in list(self.daemonsets):
                found = self._get(uid)
                if found is not None and not is_deleting(found[1]):
                    self._daemonset(found[1], nodes)
        while self.dirty:
            uid = next(iter(self.dirty))
            del self.dirty[uid]
            found = self._get(uid)
            if found is None or is_deleting(found[1]):
                continue
            rt, obj = found
            if rt.kind == "ReplicaSet":
                self._replicaset(obj)
            elif rt.kind == "StatefulSet":
                self._statefulset(obj)
            else:
                self._daemonset(obj, list(self.store.list(NODES)))

    def _active_pods(self, uid: str) -> list[dict[str, Any]]:
        return [p for p in self.store.pods_owned_by(uid) if not is_deleting(p) and not pod_terminal(p)]

    def _replicaset(self, rs: dict[str, Any]) -> None:
        replicas = int((rs.get("spec") or {}).get("replicas", 1))
        active = self._active_pods(meta(rs)["uid"])
        for _ in range(replicas - len(active)):
            self._create_pod(rs, f"{meta(rs)['name']}-{_suffix(self.rng)}")
        if len(active) > replicas:
            for pod in scale_down_order(active)[: len(active) - replicas]:  # kube's order, pod-deletion-cost too
                self.delete_pod(pod, None, "delete")
        self._replicaset_status(rs, active if len(active) == replicas else None)

    def _replicaset_status(self, rs: dict[str, Any], active: list[dict[str, Any]] | None) -> None:
        """replicas, readyReplicas and availableReplicas from the pods (what `kubectl get rs` and the
        Deployment controller read)."""
        if active is None:
            active = self._active_pods(meta(rs)["uid"])
        ready = sum(1 for p in active if condition_true(p, "Ready"))
        status = dict(rs.get("status") or {}, replicas=len(active), fullyLabeledReplicas=len(active),
                      readyReplicas=ready, availableReplicas=ready,
                      observedGeneration=meta(rs).get("generation", 1))
        if status != rs.get("status"):
            # a new top level and metadata; spec is shared, as stored objects are never changed in place
            self.store.replace(BY_KIND["ReplicaSet"], dict(rs, metadata=dict(rs["metadata"]), status=status))

    def _statefulset(self, sts: dict[str, Any]) -> None:
        replicas = int((sts.get("spec") or {}).get("replicas", 1))
        name, ns = meta(sts)["name"], meta(sts).get("namespace") or ""
        for i in range(replicas):
            if self.store.get(PODS, ns, f"{name}-{i}") is None:
                self._create_pod(sts, f"{name}-{i}", extra_labels={
                    "statefulset.kubernetes.io/pod-name": f"{name}-{i}", "apps.kubernetes.io/pod-index": str(i)})
        for pod in self._active_pods(meta(sts)["uid"]):
            try:
                ordinal = int(meta(pod)["name"].rsplit("-", 1)[1])
            except (IndexError, ValueError):
                continue
            if ordinal >= replicas:
                self.delete_pod(pod, None, "delete")

    def _daemonset(self, ds: dict[str, Any], nodes: list[dict[str, Any]]) -> None:
        template_spec = deep_copy(((ds.get("spec") or {}).get("template") or {}).get("spec") or {})
        template_spec["tolerations"] = list(template_spec.get("tolerations") or []) + DAEMONSET_TOLERATIONS
        if len(nodes) < 50:
            covered = {(p.get("spec") or {}).get("nodeName") for n in nodes for p in self.store.pods_on_node(
                meta(n)["name"]) if (controller_ref(p) or {}).get("uid") == meta(ds)["uid"] and not is_deleting(p)
                and not pod_terminal(p)}
        else:
            covered = {(p.get("spec") or {}).get("nodeName") for p in self._active_pods(meta(ds)["uid"])}
        for node in nodes:
            name = meta(node)["name"]
            if name in covered or is_deleting(node):
                continue
            if schedulable_on(template_spec, node, ignore_unschedulable=True):
                self._create_pod(ds, f"{meta(ds)['name']}-{_suffix(self.rng)}", node_name=name,
                                 tolerations=template_spec["tolerations"])

    def _create_pod(self, owner: dict[str, Any], name: str, node_name: str | None = None,
                    tolerations: list | None = None, extra_labels: dict[str, str] | None = None) -> None:
        template = (owner.get("spec") or {}).get("template") or {}
        tmeta = template.get("metadata") or {}
        spec = deep_copy(template.get("spec") or {})
        spec.setdefault("containers", [{"name": "main", "image": "registry.k8s.io/pause:3.9"}])
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("schedulerName", "default-scheduler")
        if tolerations is not None:
            spec["tolerations"] = tolerations
        if node_name:
            spec["nodeName"] = node_name
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta(owner).get("namespace") or "default",
                "labels": dict(tmeta.get("labels") or {}, **(extra_labels or {})),
                "annotations": dict(tmeta.get("annotations") or {}),
                "ownerReferences": [{
                    "apiVersion": owner.get("apiVersion", "apps/v1"), "kind": owner.get("kind"),
                    "name": meta(owner)["name"], "uid": meta(owner)["uid"],
                    "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": spec,
            "status": {"phase": "Pending"},
        }
        if self.store.get(PODS, pod["metadata"]["namespace"], name) is None:
            self.store.create(PODS, pod)
