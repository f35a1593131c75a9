"""OpenAPI v3 schemas of the kinds the simulator serves, reused rather than re-typed: the built-in kinds from
the `kubernetes` client's generated models (their `openapi_types` are the API's own field names and types),
the Karpenter kinds from the CRDs in deploy/crds/ (the same schemas a real API server publishes for them)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from api.yaml_load import safe_load
from simulator.resources import ResourceType

CRD_DIR = Path(__file__).resolve().parents[1] / "deploy" / "crds"
OBJECT_META = "V1ObjectMeta"
# Kinds whose client model is not V1<Kind> (the client prefixes names that two groups share).
MODEL_NAMES = {"Event": "CoreV1Event"}
_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\[str, (.+)\]$")
_SCALARS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"}, "int": {"type": "integer", "format": "int64"}, "float": {"type": "number"},
    "bool": {"type": "boolean"}, "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    # int-or-string, Quantity, RawExtension: the client types them all `object`
    "object": {"x-kubernetes-preserve-unknown-fields": True},
}

Components = dict[str, dict[str, Any]]


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _type_schema(type_name: str, out: Components) -> dict[str, Any]:
    if type_name in _SCALARS:
        return dict(_SCALARS[type_name])
    if m := _LIST.match(type_name):
        return {"type": "array", "items": _type_schema(m.group(1), out)}
    if m := _DICT.match(type_name):
        return {"type": "object", "additionalProperties": _type_schema(m.group(1), out)}
    add_model(type_name, out)
    return ref(type_name)


def _client() -> Any:
    from kubernetes import client  # imported when a document is first asked for: a large package

    return client


def add_model(name: str, out: Components) -> None:
    """Add the client model `name` and every model it refers to (the recursion ends at names already added)."""
    if name in out:
        return
    model = getattr(_client(), name)
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    out[name] = schema
    for attr, type_name in model.openapi_types.items():
        schema["properties"][model.attribute_map[attr]] = _type_schema(type_name, out)


def model_name(rt: ResourceType) -> str:
    return MODEL_NAMES.get(rt.kind, f"V1{rt.kind}")


@cache
def crd_documents() -> tuple[dict[str, Any], ...]:
    """The CRD documents in deploy/crds/, as nodeflow ships them."""
    return tuple(safe_load(path.read_text(encoding="utf-8")) for path in sorted(CRD_DIR.glob("*.yaml")))


@cache
def crd_validation_schemas() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(group, version, kind) -> the openAPIV3Schema of each CRD in deploy/crds/ as written: what the simulator
    validates custom resources against (simulator/crd_validation.py). Read only: never mutate."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for crd in crd_documents():
        spec = crd["spec"]
        for version in spec["versions"]:
            out[(spec["group"], version["name"], spec["names"]["kind"])] = version["schema"]["openAPIV3Schema"]
    return out


@cache
def crd_schemas() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(group, version, kind) -> the openAPIV3Schema of each CRD in deploy/crds/, metadata as ObjectMeta."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key, raw in crd_validation_schemas().items():
        schema = dict(raw)
        schema["properties"] = dict(schema.get("properties") or {}, metadata=ref(OBJECT_META))
        out[key] = schema
    return out


def kind_schema(rt: ResourceType, out: Components) -> str:
    """Add the schema of `rt` (and what it refers to) to `out`; returns its component name."""
    crd = crd_schemas().get((rt.group, rt.version, rt.kind))
    if crd is not None:
        name = f"{rt.group}.{rt.version}.{rt.kind}"
        add_model(OBJECT_META, out)
        out[name] = dict(crd)
    elif hasattr(_client(), model_name(rt)):
        name = model_name(rt)
        add_model(name, out)
        out[name] = dict(out[name])
    else:  # served, but neither a CRD here nor a client model: every field goes
        name = f"{rt.group}.{rt.version}.{rt.kind}"
        out[name] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    out[name]["x-kubernetes-group-version-kind"] = [{"group": rt.group, "version": rt.version, "kind": rt.kind}]
    return name
