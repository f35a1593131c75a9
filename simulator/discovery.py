"""Discovery documents (/api, /apis, group/version resource lists, /version) and the server-side Table
format, which is what `kubectl get` asks for and prints."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from simulator import printer_columns
from simulator.pods import is_deleting, meta, node_ready, pod_phase
from simulator.resources import RESOURCE_TYPES, ResourceType, group_versions

VERSION_INFO = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-nodeflow-sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
    vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


def api_group_list() -> dict[str, Any]:
    groups = [_group_doc(g, vs) for g, vs in group_versions().items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str) -> dict[str, Any] | None:
    versions = group_versions().get(group)
    if not versions:
        return None
    return dict(_group_doc(group, versions), kind="APIGroup", apiVersion="v1")


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    types = [r for r in RESOURCE_TYPES if r.group == group and r.version == version]
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for r in types:
        entry: dict[str, Any] = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                                 "kind": r.kind, "verbs": list(r.verbs)}
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        resources.append(entry)
        for sub in r.subresources:
            if sub == "status":
                resources.append({"name": f"{r.plural}/status", "singularName": "", "namespaced": r.namespaced,
                                  "kind": r.kind, "verbs": ["get", "patch", "update"]})
            elif sub == "eviction":
                resources.append({"name": f"{r.plural}/eviction", "singularName": "", "namespaced": True,
                                  "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
            elif sub == "scale":
                resources.append({"name": f"{r.plural}/scale", "singularName": "", "namespaced": True,
                                  "group": "autoscaling", "version": "v1", "kind": "Scale",
                                  "verbs": ["get", "patch", "update"]})
            elif sub == "binding":
                resources.append({"name": f"{r.plural}/binding", "singularName": "", "namespaced": True,
                                  "kind": "Binding", "verbs": ["create"]})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    try:
        then = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    secs = max(int((datetime.now(UTC) - then).total_seconds()), 0)
    if secs < 120:
        return f"{secs}s"
    if secs < 7200:
        return f"{secs // 60}m"
    if secs < 172800:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


def _columns(names: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    return [{"name": n, "type": t, "format": "name" if n == "Name" else "", "description": n, "priority": p}
            for n, t, p in names]


def _node_row(node: dict[str, Any]) -> list[Any]:
    status = "Ready" if node_ready(node) else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = meta(node).get("labels") or {}
    roles = ",".join(sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))) \
        or "<none>"
    version = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "v1.32.0")
    return [meta(node)["name"], status, roles, _age(meta(node).get("creationTimestamp")), version,
            labels.get("node.kubernetes.io/instance-type", "<none>")]


def _pod_row(pod: dict[str, Any]) -> list[Any]:
    containers = (pod.get("spec") or {}).get("containers") or []
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    status = "Terminating" if is_deleting(pod) else pod_phase(pod)
    if status == "Pending" and not (pod.get("spec") or {}).get("nodeName"):
        status = "Pending"
    restarts = sum(int(s.get("restartCount", 0)) for s in statuses)
    return [meta(pod)["name"], f"{ready}/{len(containers)}", status, restarts,
            _age(meta(pod).get("creationTimestamp")), (pod.get("status") or {}).get("podIP", "<none>"),
            (pod.get("spec") or {}).get("nodeName", "<none>")]


def _pdb_row(pdb: dict[str, Any]) -> list[Any]:
    spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
    return [meta(pdb)["name"], str(spec.get("minAvailable", "N/A")), str(spec.get("maxUnavailable", "N/A")),
            status.get("disruptionsAllowed", 0), _age(meta(pdb).get("creationTimestamp"))]


def _deployment_row(dep: dict[str, Any]) -> list[Any]:
    spec, status = dep.get("spec") or {}, dep.get("status") or {}
    return [meta(dep)["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0),
            _age(meta(dep).get("creationTimestamp"))]


def _replicaset_row(rs: dict[str, Any]) -> list[Any]:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    return [meta(rs)["name"], spec.get("replicas", 1), status.get("replicas", 0), status.get("readyReplicas", 0),
            _age(meta(rs).get("creationTimestamp"))]


TABLES = {
    "deployments": ([("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "integer", 0),
                     ("Available", "integer", 0), ("Age", "string", 0)], _deployment_row),
    "replicasets": ([("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0),
                     ("Ready", "integer", 0), ("Age", "string", 0)], _replicaset_row),
    "nodes": ([("Name", "string", 0), ("Status", "string", 0), ("Roles", "string", 0), ("Age", "string", 0),
               ("Version", "string", 0), ("Instance-Type", "string", 1)], _node_row),
    "pods": ([("Name", "string", 0), ("Ready", "string", 0), ("Status", "string", 0), ("Restarts", "integer", 0),
              ("Age", "string", 0), ("IP", "string", 1), ("Node", "string", 1)], _pod_row),
    "poddisruptionbudgets": ([("Name", "string", 0), ("Min Available", "string", 0),
                              ("Max Unavailable", "string", 0), ("Allowed Disruptions", "integer", 0),
                              ("Age", "string", 0)], _pdb_row),
}


def to_table(rt: ResourceType, objects: list[dict[str, Any]], list_meta: dict[str, Any]) -> dict[str, Any]:
    printer = printer_columns.columns_of(rt.group, rt.version, rt.kind) if rt.custom else None
    if printer is not None:  # a CRD's table comes from its additionalPrinterColumns (simulator/printer_columns.py)
        defs, cells = printer_columns.table(printer, objects, _age)
        return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": defs,
                "rows": [{"cells": c, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                                 "metadata": o.get("metadata") or {}}}
                         for c, o in zip(cells, objects, strict=True)]}
    columns, row_fn = TABLES.get(rt.plural, ([("Name", "string", 0), ("Age", "string", 0)],
                                             lambda o: [meta(o)["name"], _age(meta(o).get("creationTimestamp"))]))
    rows = [{"cells": row_fn(o), "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                            "metadata": o.get("metadata") or {}}} for o in objects]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": _columns(columns), "rows": rows}
