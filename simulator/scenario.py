"""Cluster snapshots (docs/contracts.md §1): a YAML stream or `kind: List` of ordinary objects, loaded into the store.

Objects are loaded in dependency order; pods bound to Ready nodes without a status come up Running and
Ready, nodes without conditions come up Ready, and every namespace mentioned is created.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from api.catalog import CATALOG_KIND, InstanceTypeCatalog
from api.yaml_load import kube_load_all
from simulator.pods import meta
from simulator.resources import BY_KIND, for_object
from simulator.store import now_rfc3339

LOAD_ORDER = ["Namespace", "NodePool", "NodeClaim", "Node", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet",
              "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodDisruptionBudget", "VolumeAttachment", "Lease",
              "Event"]
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-node-lease", "kube-public")


class ScenarioError(ValueError):
    """A snapshot that cannot be loaded."""


def load_yaml_stream(text: str) -> list[Any]:
    return kube_load_all(text)


def read_snapshot(path: str | Path) -> list[dict[str, Any]]:
    """The objects of a snapshot file (multi-document YAML or a `kind: List`)."""
    try:
        with open(path, encoding="utf-8") as fh:
            docs = load_yaml_stream(fh.read())
    except OSError as exc:
        raise ScenarioError(f"cannot read snapshot {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ScenarioError(f"snapshot {path} is not valid YAML: {exc}") from exc
    return flatten(docs)


def flatten(docs: Iterable[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ScenarioError(f"snapshot documents must be objects, got {type(doc).__name__}")
        if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
            out.extend(flatten(doc.get("items") or []))
        else:
            out.append(doc)
    return out


def _running_status(pod: dict[str, Any]) -> dict[str, Any]:
    ts = now_rfc3339()
    return {
        "phase": "Running",
        "startTime": meta(pod).get("creationTimestamp") or ts,
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": ts}
                       for t in ("Initialized", "PodScheduled", "ContainersReady", "Ready")],
        "containerStatuses": [{"name": c.get("name", "main"), "ready": True, "restartCount": 0, "started": True,
                               "image": c.get("image", ""), "imageID": "", "state": {"running": {"startedAt": ts}}}
                              for c in (pod.get("spec") or {}).get("containers") or []],
    }


def _ready_node_status(node: dict[str, Any]) -> None:
    status = node.setdefault("status", {})
    if not status.get("conditions"):
        status["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                 "message": "kubelet is posting ready status", "lastTransitionTime": now_rfc3339(),
                                 "lastHeartbeatTime": now_rfc3339()}]


def _link_owners(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Point ownerReferences at the uid of the owner present in the snapshot (same kind, namespace, name).

    Hand-written snapshots often leave uids out or make them up; without this, controllers would not see
    their pods (and create a second set) and cascades would not find their dependents.
    """
    owners: dict[tuple[str, str, str], str] = {}
    for rt, obj in items:
        m = obj["metadata"]
        m.setdefault("uid", str(uuid.uuid4()))
        owners[(rt.kind, m.get("namespace") or "", m["name"])] = m["uid"]
    for _rt, obj in items:
        m = obj["metadata"]
        for ref in m.get("ownerReferences") or []:
            kind, name = ref.get("kind", ""), ref.get("name", "")
            uid = owners.get((kind, m.get("namespace") or "", name)) or owners.get((kind, "", name))
            if uid:
                ref["uid"] = uid


def prepare(objects: list[dict[str, Any]], copy: bool = True,
            ) -> tuple[list[tuple[Any, dict[str, Any]]], InstanceTypeCatalog | None]:
    """Order and normalise snapshot objects for bulk loading; returns (resource type, object) pairs.

    With copy=False the objects themselves are stored (for freshly parsed files the caller never touches).
    """
    catalog: InstanceTypeCatalog | None = None
    namespaces: set[str] = set(DEFAULT_NAMESPACES)
    items: list[tuple[Any, dict[str, Any]]] = []
    for raw in objects:
        if raw.get("kind") == CATALOG_KIND:
            catalog = InstanceTypeCatalog.model_validate(raw)
            continue
        rt = for_object(raw)
        if rt is None:
            raise ScenarioError(f"unsupported object {raw.get('apiVersion')}/{raw.get('kind')} "
                                f"{meta(raw).get('name')!r} in snapshot")
        # a private copy, and any YAML dates become strings
        obj = json.loads(json.dumps(raw, default=str)) if copy else raw
        m = obj.setdefault("metadata", {})
        if not m.get("name"):
            raise ScenarioError(f"{rt.kind} without metadata.name in snapshot")
        for field in ("resourceVersion", "managedFields"):
            m.pop(field, None)
        if rt.namespaced:
            m.setdefault("namespace", "default")
            namespaces.add(m["namespace"])
        elif rt.kind == "Namespace":
            namespaces.discard(m["name"])
        items.append((rt, obj))
    _link_owners(items)
    nodes_ready = {}
    for rt, obj in items:
        if rt.kind == "Node":
            _ready_node_status(obj)
            nodes_ready[meta(obj)["name"]] = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in obj["status"]["conditions"])
    for rt, obj in items:
        if rt.kind == "Pod":
            spec = obj.setdefault("spec", {})
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("schedulerName", "default-scheduler")
            node = spec.get("nodeName")
            if not (obj.get("status") or {}).get("phase"):
                obj["status"] = _running_status(obj) if node and nodes_ready.get(node) else {"phase": "Pending"}
    ns_items = [(BY_KIND["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                                        "status": {"phase": "Active"}}) for ns in sorted(namespaces)]
    order = {k: i for i, k in enumerate(LOAD_ORDER)}
    items.sort(key=lambda pair: order.get(pair[0].kind, len(order)))
    return ns_items + items, catalog
