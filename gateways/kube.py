"""The one gateway to Kubernetes: every call of the worker, its activities and `nodeflow plan` goes through here.

Reads skip the client's model deserialisation (`_preload_content=False`, plain dicts): listing pods of 200
nodes every second through V1Pod objects costs more CPU than the whole drain, and raw JSON keeps fields the
typed models drop. Writes are idempotent: 404 on delete or on a finalizer removal counts as done, and
read-modify-patch writes carry the resourceVersion so a concurrent writer yields 409 and we re-read.
All calls block: activities run them in a thread.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException
from kubernetes.watch import Watch

from api import capacity_buffer, labels
from api.timestamps import format_seconds
from telemetry import metrics

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
KARPENTER = (labels.GROUP, "v1")
NODE_CLASSES = ("karpenter.k8s.aws", "v1")  # EC2NodeClass (api/ec2nodeclass.py)
POLICIES = ("nodeflow.dev", "v1alpha1")  # DisruptionPolicy (api/disruption_policy.py)
EXCLUDE_LB_VALUE = "karpenter"  # the value we set, so an untaint never drops a label someone else put there
UPDATE_ATTEMPTS = 10
Obj = dict[str, Any]
# A read-modify-patch step: the patch body for the object as read, or None when it already is as wanted.
Change = Callable[[Obj], Obj | None]
# The API server's 500 for a pod under several PDBs carries no typed reason, only this text (policy/v1 eviction).
MULTIPLE_PDBS_MESSAGE = "more than one PodDisruptionBudget"


class Eviction(StrEnum):
    EVICTED = "Evicted"  # 200/201: the pod is on its way out
    GONE = "Gone"  # 404 (deleted) or 409 (a different pod with that name: ours is gone)
    PDB_BLOCKED = "PdbBlocked"  # 429: a PodDisruptionBudget forbids it now
    MULTIPLE_PDBS = "MultiplePdbs"  # 500: several PDBs select the pod; eviction cannot decide
    FAILED = "Failed"  # anything else


@dataclass(frozen=True)
class EvictionResult:
    outcome: Eviction
    code: int
    message: str = ""


def eviction_outcome(code: int, message: str) -> Eviction:
    """The one place that reads the API server's eviction answer; callers branch on the outcome."""
    if code in (200, 201):
        return Eviction.EVICTED
    if code in (404, 409):
        return Eviction.GONE
    if code == 429:
        return Eviction.PDB_BLOCKED
    if code == 500 and MULTIPLE_PDBS_MESSAGE in message:
        return Eviction.MULTIPLE_PDBS
    return Eviction.FAILED


def _json(resp: Any) -> Obj:
    return json.loads(resp.data or b"{}")


def _finish(resp: Any) -> None:
    """Read an answer nobody needs and hand its connection back to the pool. Unread (`_preload_content=False`), the
    connection was dropped: 300 terminations opened 3,391 new connections, one per eviction, Event and deletion."""
    resp.read()
    resp.release_conn()


def _items(resp: Any) -> list[Obj]:
    return list(_json(resp).get("items") or [])


def _list_served(calls: Iterable[tuple[Callable[..., Any], str, str]]) -> list[Obj]:
    """Every object of each (list call, apiVersion, kind), typed; a kind the server does not serve (404: its CRD
    not installed, an API group off) has none."""
    out: list[Obj] = []
    for call, api_version, kind in calls:
        try:
            out += _typed(_items(call(_preload_content=False)), api_version, kind)
        except ApiException as exc:
            if exc.status != 404:
                raise
    return out


def _typed(items: list[Obj], api_version: str, kind: str) -> list[Obj]:
    """List items lack apiVersion and kind; the snapshot tells objects apart by them."""
    for it in items:
        it.setdefault("apiVersion", api_version)
        it.setdefault("kind", kind)
    return items


class Conflict(Exception):
    """The object changed under us (409): re-read and try again."""


# ---- pure helpers over the plain dicts --------------------------------------------------------------------

def node_ready(node: Obj) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def with_disrupted_taint(taints: list[Obj], now: datetime | None = None) -> list[Obj]:
    """The taint list with exactly one disrupted taint (a same-key taint with other effect is replaced).

    `timeAdded` lets the planner tell a taint left behind by a failed disruption from a fresh one; an
    existing taint keeps its stamp, so re-tainting never makes an orphan look young.
    """
    ours = [t for t in taints if t.get("key") == labels.DISRUPTED_TAINT_KEY
            and t.get("effect") == labels.DISRUPTED_TAINT_EFFECT and not t.get("value")]
    if ours:
        return [t for t in taints if t.get("key") != labels.DISRUPTED_TAINT_KEY or t is ours[0]]
    stamp = format_seconds(now or datetime.now(UTC))
    return [*without_disrupted_taint(taints), dict(labels.DISRUPTED_TAINT, timeAdded=stamp)]


def without_disrupted_taint(taints: list[Obj]) -> list[Obj]:
    return [t for t in taints if t.get("key") != labels.DISRUPTED_TAINT_KEY]


def _taint_change(exclude_from_lb: bool, now: datetime | None) -> Change:
    def change(node: Obj) -> Obj | None:
        taints = (node.get("spec") or {}).get("taints") or []
        new = with_disrupted_taint(taints, now)
        add_label = exclude_from_lb and labels.EXCLUDE_LB_LABEL not in (node["metadata"].get("labels") or {})
        if new == taints and not add_label:
            return None
        body: Obj = {"metadata": {}, "spec": {"taints": new}}
        if add_label:
            body["metadata"]["labels"] = {labels.EXCLUDE_LB_LABEL: EXCLUDE_LB_VALUE}
        return body

    return change


def _untaint_change(skip_deleting: bool, drop_lb_label: bool) -> Change:
    def change(node: Obj) -> Obj | None:
        if skip_deleting and node["metadata"].get("deletionTimestamp"):
            return None  # never untaint a node that is already being deleted (Karpenter does the same)
        taints = (node.get("spec") or {}).get("taints") or []
        keep = without_disrupted_taint(taints)
        drop = drop_lb_label and (node["metadata"].get("labels") or {}).get(labels.EXCLUDE_LB_LABEL) == EXCLUDE_LB_VALUE
        if keep == taints and not drop:
            return None
        body: Obj = {"metadata": {}, "spec": {"taints": keep or None}}
        if drop:
            body["metadata"]["labels"] = {labels.EXCLUDE_LB_LABEL: None}
        return body

    return change


def _finalizer_change(finalizer: str, present: bool) -> Change:
    def change(obj: Obj) -> Obj | None:
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if (finalizer in finalizers) == present or (present and meta.get("deletionTimestamp")):
            return None  # as wanted already; and a deleting object never gets a new finalizer
        rest = [*finalizers, finalizer] if present else [f for f in finalizers if f != finalizer]
        return {"metadata": {"finalizers": rest or None}}

    return change


EVENT_API_VERSIONS = {"Node": "v1", "Pod": "v1", "NodePool": labels.API_VERSION, "NodeClaim": labels.API_VERSION,
                      "EC2NodeClass": "karpenter.k8s.aws/v1"}
EVENT_MESSAGE_LIMIT = 1024  # the API server's limit on an Event's message


def event_body(kind: str, name: str, reason: str, message: str, now: datetime, *, uid: str | None = None,
               type_: str = "Normal", namespace: str = "default", component: str = "nodeflow",
               event_name: str | None = None) -> Obj:
    """A core/v1 Event about one object. Named (`event_name`) when a retry must not repeat it (409), else
    generated (`<name>.<random>`) for events that may repeat."""
    stamp = format_seconds(now)
    involved: Obj = {"kind": kind, "name": name, "apiVersion": EVENT_API_VERSIONS.get(kind, "v1")}
    if uid:
        involved["uid"] = uid
    if kind == "Pod":
        involved["namespace"] = namespace
    meta: Obj = {"name": event_name} if event_name else {"generateName": f"{name}."}
    return {
        "apiVersion": "v1", "kind": "Event", "metadata": {**meta, "namespace": namespace},
        "involvedObject": involved, "reason": reason, "message": message[:EVENT_MESSAGE_LIMIT], "type": type_,
        "source": {"component": component}, "reportingComponent": component,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }


class KubeClient:
    """One instance per worker process, shared by all activities and the deletion watcher."""

    def __init__(self, api_client: k8s.ApiClient, event_component: str = "nodeflow") -> None:
        self.api_client = api_client
        self.core = k8s.CoreV1Api(api_client)
        self.custom = k8s.CustomObjectsApi(api_client)
        self.policy = k8s.PolicyV1Api(api_client)
        self.storage = k8s.StorageV1Api(api_client)
        self.component = event_component

    # ---- reads ---------------------------------------------------------------------------------------

    @staticmethod
    def _get(call: Callable[[], Any]) -> Obj | None:
        try:
            return _json(call())
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def get_node(self, name: str) -> Obj | None:
        if not name:  # a NodeClaim that never registered a Node
            return None
        return self._get(lambda: self.core.read_node(name, _preload_content=False))

    def get_node_claim(self, name: str) -> Obj | None:
        if not name:
            return None
        return self._get(lambda: self.custom.get_cluster_custom_object(*KARPENTER, "nodeclaims", name,
                                                                       _preload_content=False))

    def get_node_pool(self, name: str) -> Obj | None:
        return self._get(lambda: self.custom.get_cluster_custom_object(*KARPENTER, "nodepools", name,
                                                                       _preload_content=False))

    def get_pvc_volume(self, namespace: str, claim: str) -> str | None:
        pvc = self._get(lambda: self.core.read_namespaced_persistent_volume_claim(claim, namespace,
                                                                                   _preload_content=False))
        return ((pvc or {}).get("spec") or {}).get("volumeName")

    def list_nodes(self, label_selector: str | None = None) -> list[Obj]:
        kwargs: dict[str, Any] = {"label_selector": label_selector} if label_selector else {}
        return _items(self.core.list_node(_preload_content=False, **kwargs))

    def list_karpenter(self, plural: str, label_selector: str | None = None) -> list[Obj]:
        """NodeClaims or NodePools (`plural`)."""
        kwargs: dict[str, Any] = {"label_selector": label_selector} if label_selector else {}
        return _items(self.custom.list_cluster_custom_object(*KARPENTER, plural, _preload_content=False, **kwargs))

    def list_node_claims(self, label_selector: str | None = None) -> list[Obj]:
        return self.list_karpenter("nodeclaims", label_selector)

    def list_node_pools(self) -> list[Obj]:
        return self.list_karpenter("nodepools")

    def get_node_class(self, name: str) -> Obj | None:
        """An EC2NodeClass; None when it (or its CRD) does not exist."""
        if not name:
            return None
        return self._get(lambda: self.custom.get_cluster_custom_object(*NODE_CLASSES, "ec2nodeclasses", name,
                                                                       _preload_content=False))

    def list_node_classes(self) -> list[Obj]:
        """Every EC2NodeClass; empty when the API server does not serve the kind (CRD not installed)."""
        try:
            return _typed(_items(self.custom.list_cluster_custom_object(*NODE_CLASSES, "ec2nodeclasses",
                                                                        _preload_content=False)),
                          "karpenter.k8s.aws/v1", "EC2NodeClass")
        except ApiException as exc:
            if exc.status == 404:
                return []
            raise

    def list_disruption_policies(self) -> list[Obj]:
        """Every DisruptionPolicy; empty when the API server does not serve the kind (CRD not installed)."""
        try:
            return _typed(_items(self.custom.list_cluster_custom_object(*POLICIES, "disruptionpolicies",
                                                                        _preload_content=False)),
                          "nodeflow.dev/v1alpha1", "DisruptionPolicy")
        except ApiException as exc:
            if exc.status == 404:
                return []
            raise

    def list_node_overlays(self) -> list[Obj]:
        """Every NodeOverlay (karpenter.sh/v1alpha1); empty when the API server does not serve the kind."""
        try:
            return _typed(_items(self.custom.list_cluster_custom_object(labels.GROUP, "v1alpha1", "nodeoverlays",
                                                                        _preload_content=False)),
                          f"{labels.GROUP}/v1alpha1", "NodeOverlay")
        except ApiException as exc:
            if exc.status == 404:
                return []
            raise

    def server_version(self) -> str:
        """The API server's Kubernetes version as MAJOR.MINOR ("1.32"; EKS's "32+" minor loses its "+").

        /version is a non-resource URL every authenticated client may read (system:public-info-viewer).
        """
        resp = self.api_client.call_api("/version", "GET", auth_settings=["BearerToken"], _preload_content=False,
                                        _return_http_data_only=True)
        info = _json(resp)
        minor = "".join(ch for ch in str(info.get("minor", "")) if ch.isdigit())
        return f"{info.get('major', '')}.{minor}"

    def list_all_pods(self) -> list[Obj]:
        """Every pod of the cluster (a fleet rollout's pods-ready gate; nothing on a hot path lists them all)."""
        return _items(self.core.list_pod_for_all_namespaces(_preload_content=False))

    def list_node_pods(self, node: str) -> list[Obj]:
        if not node:  # never list every pod of the cluster by accident
            return []
        return _items(self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}",
                                                            _preload_content=False))

    def list_pdbs(self, namespace: str) -> list[Obj]:
        return _items(self.policy.list_namespaced_pod_disruption_budget(namespace, _preload_content=False))

    def list_volume_attachments(self) -> list[Obj]:
        try:
            return _items(self.storage.list_volume_attachment(_preload_content=False))
        except ApiException as exc:
            if exc.status == 404:  # the API server does not serve storage.k8s.io: nothing can be attached
                return []
            raise

    def cluster_objects(self) -> list[Obj]:
        """NodePools, NodeClaims, EC2NodeClasses, Nodes, Pods, PDBs, DisruptionPolicies, NodeOverlays and the volume
        kinds as dicts, like
        `kubectl get -o json` prints them (the kinds and order of the planner's watch cache,
        runtime/cluster_cache.py)."""
        return [*_typed(self.list_node_pools(), labels.API_VERSION, "NodePool"),
                *_typed(self.list_node_claims(), labels.API_VERSION, "NodeClaim"),
                *self.list_node_classes(),
                *_typed(self.list_nodes(), "v1", "Node"),
                *_typed(_items(self.core.list_pod_for_all_namespaces(_preload_content=False)), "v1", "Pod"),
                *_typed(_items(self.policy.list_pod_disruption_budget_for_all_namespaces(_preload_content=False)),
                        "policy/v1", "PodDisruptionBudget"),
                *self.list_disruption_policies(),
                *self.list_node_overlays(),
                *self.list_volume_topology(),
                *self.list_capacity_buffers()]

    def list_capacity_buffers(self) -> list[Obj]:
        """CapacityBuffers and the shapes they name: PodTemplates, Deployments, StatefulSets, ReplicaSets
        (docs/semantics.md §20). A server that does not serve one of them (404, the CRD not installed) has none."""
        apps = k8s.AppsV1Api(self.api_client)
        calls = ((functools.partial(self.custom.list_cluster_custom_object, capacity_buffer.GROUP,
                                    capacity_buffer.VERSION, "capacitybuffers"),
                  capacity_buffer.API_VERSION, capacity_buffer.KIND),
                 (self.core.list_pod_template_for_all_namespaces, "v1", "PodTemplate"),
                 (apps.list_deployment_for_all_namespaces, "apps/v1", "Deployment"),
                 (apps.list_stateful_set_for_all_namespaces, "apps/v1", "StatefulSet"),
                 (apps.list_replica_set_for_all_namespaces, "apps/v1", "ReplicaSet"))
        return _list_served(calls)

    def patch_capacity_buffer_status(self, namespace: str, name: str, body: Obj) -> Obj | None:
        """Merge-patch a CapacityBuffer's status subresource (replicas, conditions: runtime/capacity_buffers.py)."""
        return self._patch(lambda: self.custom.patch_namespaced_custom_object_status(
            capacity_buffer.GROUP, capacity_buffer.VERSION, namespace, "capacitybuffers", name, body,
            _content_type=MERGE_PATCH, _preload_content=False))

    def list_volume_topology(self) -> list[Obj]:
        """PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes: where a pod's volumes let it run
        (docs/semantics.md §3.5). A server that does not serve one of them (404) has none."""
        calls = ((self.core.list_persistent_volume, "v1", "PersistentVolume"),
                 (self.core.list_persistent_volume_claim_for_all_namespaces, "v1", "PersistentVolumeClaim"),
                 (k8s.StorageV1Api(self.api_client).list_storage_class, "storage.k8s.io/v1", "StorageClass"),
                 (k8s.StorageV1Api(self.api_client).list_csi_node, "storage.k8s.io/v1", "CSINode"))
        return _list_served(calls)

    def watch(self, kind: str, timeout_seconds: int = 30) -> tuple[Watch, Iterator[Any]]:
        """A watch on Nodes (`nodes`) or a Karpenter kind, its events as plain dicts; stop it with the returned
        Watch. Not made into client models: in a burst of 300 terminations that cost 4.3 s of the worker's CPU for
        events whose only reader wakes a pass."""
        w = Watch()
        if kind == "nodes":
            return w, w.stream(self.core.list_node, timeout_seconds=timeout_seconds, deserialize=False,
                               _request_timeout=timeout_seconds * 2)
        return w, w.stream(self.custom.list_cluster_custom_object, *KARPENTER, kind, deserialize=False,
                           timeout_seconds=timeout_seconds, _request_timeout=timeout_seconds * 2)

    # ---- writes --------------------------------------------------------------------------------------

    def patch_node(self, name: str, body: Obj) -> Obj | None:
        return self._patch(lambda: self.core.patch_node(name, body, _content_type=MERGE_PATCH,
                                                        _preload_content=False))

    def patch_pod(self, namespace: str, name: str, body: Obj) -> Obj | None:
        """Merge-patch a pod's metadata (nodeflow's pod-deletion-cost, runtime/pod_deletion_cost.py); None when the pod
        is gone."""
        return self._patch(lambda: self.core.patch_namespaced_pod(name, namespace, body, _content_type=MERGE_PATCH,
                                                                  _preload_content=False))

    def patch_node_claim(self, name: str, body: Obj) -> Obj | None:
        return self._patch(lambda: self.custom.patch_cluster_custom_object(
            *KARPENTER, "nodeclaims", name, body, _content_type=MERGE_PATCH, _preload_content=False))

    def patch_node_claim_status(self, name: str, body: Obj) -> Obj | None:
        """Merge-patch the status subresource (the main resource ignores status)."""
        return self._patch(lambda: self.custom.patch_cluster_custom_object_status(
            *KARPENTER, "nodeclaims", name, body, _content_type=MERGE_PATCH, _preload_content=False))

    def patch_node_pool(self, name: str, body: Obj) -> Obj | None:
        """Merge-patch a NodePool's metadata (nodeflow's own annotations); None when the pool is gone."""
        return self._patch(lambda: self.custom.patch_cluster_custom_object(
            *KARPENTER, "nodepools", name, body, _content_type=MERGE_PATCH, _preload_content=False))

    def patch_node_pool_status(self, name: str, body: Obj) -> Obj | None:
        """Merge-patch a NodePool's status subresource (resources, nodes, conditions: runtime/nodepool_status.py)."""
        return self._patch(lambda: self.custom.patch_cluster_custom_object_status(
            *KARPENTER, "nodepools", name, body, _content_type=MERGE_PATCH, _preload_content=False))

    def patch_node_class(self, name: str, body: Obj) -> Obj | None:
        """Merge-patch an EC2NodeClass's metadata (its hash annotations)."""
        return self._patch(lambda: self.custom.patch_cluster_custom_object(
            *NODE_CLASSES, "ec2nodeclasses", name, body, _content_type=MERGE_PATCH, _preload_content=False))

    def patch_node_class_status(self, name: str, body: Obj) -> Obj | None:
        """Merge-patch an EC2NodeClass's status subresource (resolved AMIs, subnets, groups, conditions)."""
        return self._patch(lambda: self.custom.patch_cluster_custom_object_status(
            *NODE_CLASSES, "ec2nodeclasses", name, body, _content_type=MERGE_PATCH, _preload_content=False))

    @staticmethod
    def _patch(call: Callable[[], Any]) -> Obj | None:
        try:
            return _json(call())
        except ApiException as exc:
            if exc.status == 404:
                return None
            if exc.status == 409:
                raise Conflict(str(exc.reason)) from exc
            raise

    def update(self, kind: str, name: str, change: Change, attempts: int = UPDATE_ATTEMPTS,
               status: bool = False, current: Obj | None = None) -> bool | None:
        """Read-modify-patch of a Node, NodeClaim or NodePool with the resourceVersion as precondition, retried on
        409. `status`: the change is to the object's status, patched through the status subresource. `current`:
        the object as the caller just read it, used for the first attempt instead of a GET (a stale one costs a
        409 and a fresh read, never a lost write).

        None: the object is gone; False: it already was as wanted; True: patched.
        """
        return self.updated(kind, name, change, attempts, status, current)[0]

    def updated(self, kind: str, name: str, change: Change, attempts: int = UPDATE_ATTEMPTS,
                status: bool = False, current: Obj | None = None) -> tuple[bool | None, Obj | None]:
        """`update`, with the object as it is now stored: the PATCH's answer, or the copy read when nothing needed
        writing (None when gone). A caller's next write to the object starts from it instead of a fresh GET."""
        get = self.get_node if kind == "Node" else self.get_node_pool if kind == "NodePool" else self.get_node_claim
        patch = self.patch_node if kind == "Node" else (
            (self.patch_node_pool_status if status else self.patch_node_pool) if kind == "NodePool" else
            (self.patch_node_claim_status if status else self.patch_node_claim))
        for _ in range(attempts):
            obj, current = current or get(name), None
            if obj is None:
                return None, None
            body = change(obj)
            if body is None:
                return False, obj
            body.setdefault("metadata", {})["resourceVersion"] = obj["metadata"].get("resourceVersion")
            try:
                answer = patch(name, body)
            except Conflict:
                continue
            return (True, answer) if answer is not None else (None, None)
        raise Conflict(f"could not update {kind} {name}: too many conflicts")

    def annotate_claim(self, name: str, key: str, value: str | Callable[[Obj], str | None],
                       current: Obj | None = None) -> tuple[str | None, Obj | None]:
        """Set annotation `key` on a NodeClaim unless it already has one. `value` may be computed from the claim as
        read (None: nothing to set). Returns the value it holds now (the first writer's; "" none) and the claim as
        now stored (the PATCH's answer, or the copy read when nothing was written); (None, None) when the claim is
        gone. Safe against concurrent writers (resourceVersion): a 409 reads again and computes again."""
        held: list[str] = []

        def change(obj: Obj) -> Obj | None:
            existing = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
            wanted = existing or (value(obj) if callable(value) else value)
            held[:] = [wanted or ""]
            return None if existing or not wanted else {"metadata": {"annotations": {key: wanted}}}

        outcome, claim = self.updated("NodeClaim", name, change, current=current)
        return (None, None) if outcome is None else (held[0], claim)

    def taint(self, name: str, exclude_from_lb: bool = False, now: datetime | None = None,
              current: Obj | None = None) -> bool:
        """Ensure the disrupted taint (stamped `timeAdded`), optionally the load-balancer exclusion label.
        False when the node is gone."""
        return self.update("Node", name, _taint_change(exclude_from_lb, now), current=current) is not None

    def untaint(self, name: str, skip_deleting: bool = True, drop_lb_label: bool = False) -> bool:
        """Remove the disrupted taint (and our load-balancer exclusion label when asked). False when gone.

        `skip_deleting` leaves a node that is being deleted as it is: its termination still needs the taint.
        """
        return self.update("Node", name, _untaint_change(skip_deleting, drop_lb_label)) is not None

    def add_finalizer(self, kind: str, name: str, finalizer: str = labels.TERMINATION_FINALIZER) -> bool:
        """Add a finalizer unless the object is deleting. True when it was added now."""
        return bool(self.update(kind, name, _finalizer_change(finalizer, True)))

    def remove_finalizer(self, kind: str, name: str, finalizer: str = labels.TERMINATION_FINALIZER,
                         current: Obj | None = None) -> bool:
        """Remove one finalizer (retrying on conflict). True when it was there and is gone now."""
        return bool(self.update(kind, name, _finalizer_change(finalizer, False), current=current))

    def create_node_claim(self, body: Obj) -> Obj:
        """Create, or return the one a concurrent attempt created first (409)."""
        try:
            return _json(self.custom.create_cluster_custom_object(*KARPENTER, "nodeclaims", body,
                                                                  _preload_content=False))
        except ApiException as exc:
            existing = self.get_node_claim(body["metadata"]["name"]) if exc.status == 409 else None
            if existing is None:
                raise
            return existing

    def delete_node(self, name: str) -> bool:
        if not name:
            return False
        return self._delete(self._node_deletion(name))

    def delete_node_claim(self, name: str) -> bool:
        return self._delete(self._node_claim_deletion(name))

    def delete_node_claim_answer(self, name: str) -> tuple[bool, Obj | None]:
        """`delete_node_claim`, with the NodeClaim the API server answered (a claim held by finalizers, its
        deletionTimestamp set); None when the answer is not the claim (a Status) or the claim was gone."""
        return self._delete_held("NodeClaim", self._node_claim_deletion(name))

    def delete_unheld(self, kind: str, name: str) -> bool:
        """Delete a Node or NodeClaim that owes no termination (nothing ran on it), finalizers and all. Our lifecycle
        controller and deletion watcher add our finalizer to every such object not deleting, so one may put it back
        between the PATCH and the DELETE; the DELETE's answer then shows the object held, and our finalizer goes
        again, which nothing re-adds to a deleting object. True when the object was there."""
        unheld = {"metadata": {"finalizers": None}}
        if kind == "Node":
            self.patch_node(name, unheld)
            call = self._node_deletion(name)
        elif kind == "NodeClaim":
            self.patch_node_claim(name, unheld)
            call = self._node_claim_deletion(name)
        else:
            raise ValueError(f"delete_unheld takes a Node or a NodeClaim, not {kind!r}")
        found, held = self._delete_held(kind, call)
        if held is not None:
            self.remove_finalizer(kind, name, current=held)
        return found

    @staticmethod
    def _delete_held(kind: str, call: Callable[[], Any]) -> tuple[bool, Obj | None]:
        """(found, the object when the answer shows it held by finalizers: deletionTimestamp set); None when the
        answer is a Status or the object was gone."""
        found, raw = KubeClient._delete_answer(call)
        if not found:
            return False, None
        answer = _json(raw)
        meta = answer.get("metadata") or {}
        held = answer.get("kind") == kind and meta.get("resourceVersion") and meta.get("deletionTimestamp")
        return True, answer if held else None

    def _node_deletion(self, name: str) -> Callable[[], Any]:
        return lambda: self.core.delete_node(name, _preload_content=False)

    def _node_claim_deletion(self, name: str) -> Callable[[], Any]:
        return lambda: self.custom.delete_cluster_custom_object(*KARPENTER, "nodeclaims", name,
                                                                _preload_content=False)

    @staticmethod
    def _delete(call: Callable[[], Any]) -> bool:
        found, answer = KubeClient._delete_answer(call)
        if found:
            _finish(answer)
        return found

    @staticmethod
    def _delete_answer(call: Callable[[], Any]) -> tuple[bool, Any]:
        """(False, None) when the object was already gone (404); else (True, the raw answer)."""
        try:
            return True, call()
        except ApiException as exc:
            if exc.status == 404:
                return False, None
            raise

    def evict(self, pod: Obj) -> EvictionResult:
        """POST the Eviction subresource with a UID precondition; the answer as a typed outcome."""
        meta = pod["metadata"]
        body = {
            "apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "deleteOptions": {"preconditions": {"uid": meta.get("uid")}},
        }
        try:
            _finish(self.core.create_namespaced_pod_eviction(meta["name"], meta["namespace"], body,
                                                             _preload_content=False))
            metrics.EVICTIONS.labels(code="201").inc()
            return EvictionResult(Eviction.EVICTED, 201)
        except ApiException as exc:
            message = str(exc.reason or "")
            with contextlib.suppress(ValueError, AttributeError):
                message = json.loads(exc.body or "{}").get("message") or message
            metrics.EVICTIONS.labels(code=str(exc.status or 0)).inc()
            code = int(exc.status or 0)
            return EvictionResult(eviction_outcome(code, message), code, message)

    def delete_pod(self, pod: Obj, grace_seconds: int | None) -> bool:
        meta = pod["metadata"]
        body: Obj = {"preconditions": {"uid": meta.get("uid")}}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        try:
            _finish(self.core.delete_namespaced_pod(meta["name"], meta["namespace"], body=body,
                                                    grace_period_seconds=grace_seconds, _preload_content=False))
            return True
        except ApiException as exc:
            if exc.status in (404, 409):
                return False
            raise

    # ---- events --------------------------------------------------------------------------------------

    def create_event(self, body: Obj) -> bool:
        """Create an Event; False when one of that name exists (a named Event is recorded once)."""
        try:
            _finish(self.core.create_namespaced_event(body["metadata"]["namespace"], body, _preload_content=False))
            return True
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise

    def event(self, kind: str, obj: Obj | None, name: str, reason: str, message: str,
              type_: str = "Normal", namespace: str = "default") -> None:
        """Best effort: a Kubernetes Event on the object; failures are logged, never raised."""
        uid = ((obj or {}).get("metadata") or {}).get("uid")
        body = event_body(kind, name, reason, message, datetime.now(UTC), uid=uid, type_=type_, namespace=namespace,
                          component=self.component)
        try:
            self.create_event(body)
        except Exception as exc:
            log.warning("event %s on %s %s not recorded: %s", reason, kind, name, exc)
