"""The `scale` subresource of Deployments, ReplicaSets and StatefulSets (what `kubectl scale` and HPAs use): an
autoscaling/v1 Scale read from, and written to, the parent's spec.replicas."""

from __future__ import annotations

from typing import Any

from simulator.errors import bad_request, conflict
from simulator.patch import deep_copy, json_patch, merge_patch
from simulator.pods import meta
from simulator.resources import ResourceType


def selector_text(selector: dict[str, Any] | None) -> str:
    """A label selector in its string form (`app=web,tier in (a,b)`), as Scale.status.selector carries it."""
    sel = selector or {}
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op, key, values = e.get("operator"), e.get("key"), ",".join(e.get("values") or [])
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}.get(op, key))
    return ",".join(parts)


def to_scale(obj: dict[str, Any]) -> dict[str, Any]:
    m = meta(obj)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: m[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in m},
            "spec": {"replicas": int(spec.get("replicas", 1))},
            "status": {"replicas": int(status.get("replicas", 0)), "selector": selector_text(spec.get("selector"))}}


def scaled(rt: ResourceType, obj: dict[str, Any], ctype: str | None, body: Any) -> dict[str, Any]:
    """The parent object after a PUT (ctype None) or PATCH of its Scale."""
    current = to_scale(obj)
    if ctype is None:
        new = body
    elif ctype == "application/json-patch+json":
        new = json_patch(current, body)
    elif isinstance(body, dict):  # a Scale has no lists: merge and strategic merge patches agree
        new = merge_patch(deep_copy(current), body)
    else:
        raise bad_request("a merge patch must be a JSON object")
    rv = ((new or {}).get("metadata") or {}).get("resourceVersion") if isinstance(new, dict) else None
    if rv and rv != meta(obj).get("resourceVersion"):
        raise conflict(rt.plural, meta(obj)["name"], rt.group)
    replicas = ((new or {}).get("spec") or {}).get("replicas") if isinstance(new, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise bad_request(f"spec.replicas: Invalid value: {replicas!r}: must be a non-negative integer")
    out = deep_copy(obj)
    out.setdefault("spec", {})["replicas"] = replicas
    if out["spec"] != obj.get("spec"):
        out["metadata"]["generation"] = int(out["metadata"].get("generation", 1)) + 1
    return out
