"""Server-side field validation (`?fieldValidation=Strict|Warn`, what kubectl sends when the OpenAPI document
says the server supports it): fields the kind's schema does not declare, and values of the wrong shape.

This is the decoding step, for every kind; what a custom resource's schema and rules refuse after decoding (and
what is pruned when the client did not ask for Strict) is simulator/crd_validation.py."""

from __future__ import annotations

from typing import Any

from simulator.openapi import schema_of
from simulator.resources import ResourceType
from simulator.schemas import Components

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "boolean": (bool,), "integer": (int,), "number": (int, float),
    # Quantities and the like are typed string in the client's models; YAML gives 1 or 0.5 for them.
    "string": (str, int, float),
}


def _resolve(schema: dict[str, Any], components: Components) -> dict[str, Any]:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _shape_ok(value: Any, schema: dict[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    want = schema.get("type")
    if want is None:
        return True
    ok = isinstance(value, _PYTHON_TYPES.get(want, (object,)))
    return ok and not (want in ("integer", "number") and isinstance(value, bool))


def problems(value: Any, schema: dict[str, Any], components: Components, path: str = "") -> list[str]:
    """Each unknown field and wrongly shaped value under `value`, as the API server words them."""
    schema = _resolve(schema, components)
    if value is None or schema.get("anyOf") or schema.get("oneOf"):
        return []
    if not _shape_ok(value, schema):
        return [f'{path or "."}: expected {schema.get("type")}, got {type(value).__name__}']
    out: list[str] = []
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out.extend(problems(item, schema["items"], components, f"{path}[{i}]"))
    elif isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            child = f"{path}.{key}" if path else key
            if props and key in props:
                out.extend(problems(item, props[key], components, child))
            elif isinstance(extra, dict):
                out.extend(problems(item, extra, components, child))
            elif props and not extra and not schema.get("x-kubernetes-preserve-unknown-fields") \
                    and not key.startswith("$"):  # $patch, $setElementOrder/...: strategic merge directives
                out.append(f'unknown field "{child}"')
    return out


def check(rt: ResourceType, body: Any) -> list[str]:
    """The problems of an object (or a merge patch) of kind `rt`."""
    schema, components = schema_of(rt)
    return problems(body, schema, components)
