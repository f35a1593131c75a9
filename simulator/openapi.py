"""The OpenAPI v3 documents (`/openapi/v3` and one per group/version), which kubectl reads to learn that
the server validates fields itself (`fieldValidation` on every write), for `kubectl explain`, and which
clients cache by the hash in each document's URL."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Any

from simulator.resources import RESOURCE_TYPES, ResourceType
from simulator.schemas import Components, kind_schema, ref

FIELD_VALIDATION = {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True},
                    "description": "Ignore, Warn or Strict: what the server does with unknown or duplicate fields"}
NAMESPACE_PARAM = {"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}
NAME_PARAM = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}


def gv_path(group: str, version: str) -> str:
    """The key of a group/version in the root document: `api/v1`, `apis/apps/v1`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _op(rt: ResourceType, action: str, schema: str, writes: bool) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": f"{action}{rt.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "parameters": [FIELD_VALIDATION] if writes else [],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref(schema)}}}},
    }
    return op


def _paths(rt: ResourceType, schema: str) -> dict[str, Any]:
    base = "/" + gv_path(rt.group, rt.version)
    collection = f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
    scope = [NAMESPACE_PARAM] if rt.namespaced else []
    # No requestBody on patch: kubectl then builds apply's strategic merge patches from its own types.
    return {
        collection: {"parameters": scope, "get": _op(rt, "list", schema, False),
                     "post": _op(rt, "post", schema, True)},
        f"{collection}/{{name}}": {"parameters": [*scope, NAME_PARAM], "get": _op(rt, "get", schema, False),
                                   "put": _op(rt, "put", schema, True), "patch": _op(rt, "patch", schema, True),
                                   "delete": _op(rt, "delete", schema, False)},
    }


@cache
def gv_document(group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group/version (None when the simulator serves none of it)."""
    types = [rt for rt in RESOURCE_TYPES if rt.group == group and rt.version == version]
    if not types:
        return None
    components: Components = {}
    paths: dict[str, Any] = {}
    for rt in types:
        paths.update(_paths(rt, kind_schema(rt, components)))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": paths,
            "components": {"schemas": components}}


@cache
def gv_body(group: str, version: str) -> tuple[str, str] | None:
    """The serialized document and its hash (the `hash` query clients cache it under)."""
    doc = gv_document(group, version)
    if doc is None:
        return None
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True)
    return text, hashlib.sha512(text.encode()).hexdigest()[:64].upper()


@cache
def root_document() -> dict[str, Any]:
    gvs = dict.fromkeys((rt.group, rt.version) for rt in RESOURCE_TYPES)
    paths: dict[str, Any] = {}
    for group, version in gvs:
        body = gv_body(group, version)
        if body is not None:
            key = gv_path(group, version)
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={body[1]}"}
    return {"paths": paths}


def schema_of(rt: ResourceType) -> tuple[dict[str, Any], Components]:
    """The schema of `rt` and the components its references resolve in."""
    doc = gv_document(rt.group, rt.version)
    assert doc is not None
    components = doc["components"]["schemas"]
    for schema in components.values():
        if {"group": rt.group, "version": rt.version, "kind": rt.kind} in schema.get(
                "x-kubernetes-group-version-kind", []):
            return schema, components
    raise KeyError(rt.kind)
