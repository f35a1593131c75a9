"""Thin, fast access to the Kubernetes objects termination touches, through the official `kubernetes` client.

Reads skip the client's model deserialisation (`_preload_content=False`, plain dicts): listing pods of 200
nodes every second through V1Pod objects costs more CPU than the whole drain. Writes are idempotent: 404
on delete or on a finalizer removal counts as done, and patches carry the resourceVersion so a concurrent
writer yields 409 and the caller re-reads.
"""

from __future__ import annotations

import contextlib
import json
import logging
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from api import labels
from telemetry import metrics

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
KARPENTER = ("karpenter.sh", "v1")
Obj = dict[str, Any]


def _json(resp: Any) -> Obj:
    return json.loads(resp.data or b"{}")


class Conflict(Exception):
    """The object changed under us (409): re-read and try again."""


class KubeClient:
    """Blocking calls (run them in a thread); one instance shared by all activities of a worker."""

    def __init__(self, api_client: k8s.ApiClient, event_component: str = "nodeflow") -> None:
        self.api_client = api_client
        self.core = k8s.CoreV1Api(api_client)
        self.custom = k8s.CustomObjectsApi(api_client)
        self.policy = k8s.PolicyV1Api(api_client)
        self.storage = k8s.StorageV1Api(api_client)
        self.component = event_component

    # ---- reads ---------------------------------------------------------------------------------------

    def get_node(self, name: str) -> Obj | None:
        if not name:  # a NodeClaim that never registered a Node
            return None
        try:
            return _json(self.core.read_node(name, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def get_node_claim(self, name: str) -> Obj | None:
        if not name:
            return None
        try:
            return _json(self.custom.get_cluster_custom_object(*KARPENTER, "nodeclaims", name,
                                                               _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list_node_claims(self, label_selector: str | None = None) -> list[Obj]:
        kwargs: dict[str, Any] = {"label_selector": label_selector} if label_selector else {}
        data = _json(self.custom.list_cluster_custom_object(*KARPENTER, "nodeclaims", _preload_content=False,
                                                            **kwargs))
        return list(data.get("items") or [])

    def list_node_pods(self, node: str) -> list[Obj]:
        if not node:  # never list every pod of the cluster by accident
            return []
        data = _json(self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}",
                                                           _preload_content=False))
        return list(data.get("items") or [])

    def list_pdbs(self, namespace: str) -> list[Obj]:
        data = _json(self.policy.list_namespaced_pod_disruption_budget(namespace, _preload_content=False))
        return list(data.get("items") or [])

    def list_volume_attachments(self) -> list[Obj]:
        try:
            data = _json(self.storage.list_volume_attachment(_preload_content=False))
        except ApiException as exc:
            if exc.status == 404:  # the API server does not serve storage.k8s.io: nothing can be attached
                return []
            raise
        return list(data.get("items") or [])

    def get_pvc_volume(self, namespace: str, claim: str) -> str | None:
        try:
            pvc = _json(self.core.read_namespaced_persistent_volume_claim(claim, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return (pvc.get("spec") or {}).get("volumeName")

    # ---- writes --------------------------------------------------------------------------------------

    def patch_node(self, name: str, body: Obj) -> Obj | None:
        return self._patch(lambda: self.core.patch_node(name, body, _content_type=MERGE_PATCH,
                                                        _preload_content=False))

    def patch_node_claim(self, name: str, body: Obj) -> Obj | None:
        return self._patch(lambda: self.custom.patch_cluster_custom_object(
            *KARPENTER, "nodeclaims", name, body, _content_type=MERGE_PATCH, _preload_content=False))

    def _patch(self, call: Any) -> Obj | None:
        try:
            return _json(call())
        except ApiException as exc:
            if exc.status == 404:
                return None
            if exc.status == 409:
                raise Conflict(str(exc.reason)) from exc
            raise

    def delete_node(self, name: str) -> bool:
        if not name:
            return False
        return self._delete(lambda: self.core.delete_node(name, _preload_content=False))

    def delete_node_claim(self, name: str) -> bool:
        return self._delete(lambda: self.custom.delete_cluster_custom_object(*KARPENTER, "nodeclaims", name,
                                                                             _preload_content=False))

    def _delete(self, call: Any) -> bool:
        try:
            call()
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise

    def evict(self, pod: Obj) -> tuple[int, str]:
        """POST the Eviction subresource with a UID precondition; returns (HTTP code, message)."""
        meta = pod["metadata"]
        body = {
            "apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "deleteOptions": {"preconditions": {"uid": meta.get("uid")}},
        }
        try:
            self.core.create_namespaced_pod_eviction(meta["name"], meta["namespace"], body, _preload_content=False)
            metrics.EVICTIONS.labels(code="201").inc()
            return 201, ""
        except ApiException as exc:
            message = str(exc.reason or "")
            with contextlib.suppress(ValueError, AttributeError):
                message = json.loads(exc.body or "{}").get("message") or message
            metrics.EVICTIONS.labels(code=str(exc.status or 0)).inc()
            return int(exc.status or 0), message

    def delete_pod(self, pod: Obj, grace_seconds: int | None) -> bool:
        meta = pod["metadata"]
        body: Obj = {"preconditions": {"uid": meta.get("uid")}}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        try:
            self.core.delete_namespaced_pod(meta["name"], meta["namespace"], body=body,
                                            grace_period_seconds=grace_seconds, _preload_content=False)
            return True
        except ApiException as exc:
            if exc.status in (404, 409):
                return False
            raise

    def remove_finalizer(self, kind: str, name: str, finalizer: str = labels.TERMINATION_FINALIZER) -> bool:
        """Remove one finalizer (retrying on conflict). True when it was there and is gone now."""
        get = self.get_node if kind == "Node" else self.get_node_claim
        patch = self.patch_node if kind == "Node" else self.patch_node_claim
        for _ in range(10):
            obj = get(name)
            if obj is None:
                return False
            finalizers = list(obj["metadata"].get("finalizers") or [])
            if finalizer not in finalizers:
                return False
            rest = [f for f in finalizers if f != finalizer]
            try:
                patch(name, {"metadata": {"finalizers": rest or None,
                                          "resourceVersion": obj["metadata"].get("resourceVersion")}})
                return True
            except Conflict:
                continue
        raise Conflict(f"could not remove finalizer from {kind} {name}: too many conflicts")

    def event(self, kind: str, obj: Obj | None, name: str, reason: str, message: str,
              type_: str = "Normal", namespace: str = "default") -> None:
        """Best effort: a Kubernetes Event on the object; failures are logged, never raised."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        meta = (obj or {}).get("metadata") or {}
        api_version = "v1" if kind in ("Node", "Pod") else "karpenter.sh/v1"
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name, "uid": meta.get("uid"),
                               **({"namespace": namespace} if kind == "Pod" else {})},
            "reason": reason, "message": message[:1024], "type": type_,
            "source": {"component": self.component}, "reportingComponent": self.component,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }
        try:
            self.core.create_namespaced_event(namespace, body, _preload_content=False)
        except Exception as exc:
            log.warning("event %s on %s %s not recorded: %s", reason, kind, name, exc)
