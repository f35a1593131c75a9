"""Structural-schema handling of custom resources as kube-apiserver does it for a CRD: unknown fields pruned
(kept under `x-kubernetes-preserve-unknown-fields`), `default`s applied, then the OpenAPI value checks (type,
`nullable`, `enum`, `pattern`, `format` date/date-time, `minLength`/`maxLength`, `minItems`/`maxItems`,
`minProperties`/`maxProperties`, `minimum`/`maximum`, `required`, `x-kubernetes-list-type` set/map uniqueness).

Follows k8s.io/apiextensions-apiserver/pkg/apiserver/schema (pruning, defaulting) and its validation of
kube-openapi's validate package, with CRD validation ratcheting (GA in 1.33): on an update, a subtree equal to
the stored one is not checked again, so objects stored before a schema tightened stay writable.
What differs from the real server is listed in docs/decisions.md ("Where the emulator differs ...").
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from functools import cache
from typing import Any

from simulator.crd_field_errors import FieldError, invalid, show, type_invalid

Schema = dict[str, Any]
ROOT_META = ("apiVersion", "kind", "metadata")  # the server's own, not pruned or checked against the schema
MISSING = object()


def child_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _preserves(schema: Schema) -> bool:
    return bool(schema.get("x-kubernetes-preserve-unknown-fields")) or bool(schema.get("x-kubernetes-int-or-string"))


def prune(value: Any, schema: Schema, root: bool = False) -> Any:
    """`value` without the fields its schema does not declare, nor null fields it does not make `nullable`
    (in place; returns it)."""
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key in list(value):
            if root and key in ROOT_META:
                continue
            if props is not None and key in props:
                if value[key] is None and not props[key].get("nullable"):
                    del value[key]  # a null for a field that is not nullable is dropped (then defaulted), since 1.20
                else:
                    prune(value[key], props[key])
            elif isinstance(extra, dict):
                prune(value[key], extra)
            elif not (_preserves(schema) or extra is True):
                del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            prune(item, schema["items"])
    return value


def apply_defaults(value: Any, schema: Schema) -> Any:
    """Fill each absent field (or null one that is not nullable) that has a `default` (in place; returns it)."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            current = value.get(key, MISSING)
            if "default" in sub and (current is MISSING or (current is None and not sub.get("nullable"))):
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                apply_defaults(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                apply_defaults(value[key], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(item, schema["items"])
    return value


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "integer": (int,),
    "number": (int, float),
}


def type_of(value: Any) -> str:
    """The JSON type name of a decoded value, as the validator names it in its messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for name in ("object", "array", "string", "integer", "number"):
        if isinstance(value, _JSON_TYPES[name]):
            return name
    return type(value).__name__


def _type_ok(value: Any, schema: Schema) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return type_of(value) in ("integer", "string")
    want = schema.get("type")
    if want is None:
        return True
    got = type_of(value)
    return got == want or (want == "number" and got == "integer")


@cache
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _format_ok(value: str, fmt: str | None) -> bool:
    """RFC 3339 full-date (`date`) and date-time (`date-time`), the two formats these CRDs use."""
    try:
        if fmt == "date":
            return re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) is not None and bool(dt.date.fromisoformat(value))
        if fmt == "date-time":
            return "T" in value.upper() and bool(dt.datetime.fromisoformat(re.sub(r"[zZ]$", "+00:00", value)))
    except ValueError:
        return False
    return True


def _string_errors(value: str, schema: Schema, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    n = len(value)
    if "maxLength" in schema and n > schema["maxLength"]:
        out.append(FieldError(path, "FieldValueTooLong", f"may not be more than {schema['maxLength']} bytes"))
    if "minLength" in schema and n < schema["minLength"]:
        out.append(invalid(path, value, f"{path} in body should be at least {schema['minLength']} chars long"))
    if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
        out.append(invalid(path, value, f"{path} in body should match '{schema['pattern']}'"))
    if schema.get("format") in ("date", "date-time") and not _format_ok(value, schema.get("format")):
        out.append(type_invalid(path, value, f"{path} in body must be of type {schema['format']}: {show(value)}"))
    return out


def _number_errors(value: float, schema: Schema, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    if "minimum" in schema:
        low, excl = schema["minimum"], schema.get("exclusiveMinimum")
        if value < low or (excl and value == low):
            word = "greater than" if excl else "greater than or equal to"
            out.append(invalid(path, value, f"{path} in body should be {word} {low}"))
    if "maximum" in schema:
        high, excl = schema["maximum"], schema.get("exclusiveMaximum")
        if value > high or (excl and value == high):
            word = "less than" if excl else "less than or equal to"
            out.append(invalid(path, value, f"{path} in body should be {word} {high}"))
    return out


def _scalar_errors(value: Any, schema: Schema, path: str) -> list[FieldError]:
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(show(e) for e in schema["enum"])
        return [FieldError(path, "FieldValueNotSupported", f"{show(value)}: supported values: {supported}")]
    if isinstance(value, str):
        return _string_errors(value, schema, path)
    if type_of(value) in ("integer", "number"):
        return _number_errors(value, schema, path)
    return []


def _count_errors(value: list[Any] | dict[str, Any], schema: Schema, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    noun, n = ("items", len(value)) if isinstance(value, list) else ("properties", len(value))
    high, low = ("maxItems", "minItems") if isinstance(value, list) else ("maxProperties", "minProperties")
    if high in schema and n > schema[high]:
        out.append(FieldError(path, "FieldValueTooMany", f"{n}: must have at most {schema[high]} items"))
    if low in schema and n < schema[low]:
        out.append(invalid(path, n, f"{path} in body should have at least {schema[low]} {noun}"))
    return out


def _duplicate_errors(items: list[Any], schema: Schema, path: str) -> list[FieldError]:
    """`x-kubernetes-list-type: set` holds each value once, `map` each combination of its list-map-keys once."""
    kind = schema.get("x-kubernetes-list-type")
    if kind not in ("set", "map"):
        return []
    keys = schema.get("x-kubernetes-list-map-keys") or []
    seen: list[Any] = []
    out: list[FieldError] = []
    for i, item in enumerate(items):
        ident = item if kind == "set" else {k: item.get(k) for k in keys if isinstance(item, dict) and k in item}
        if ident in seen:
            shown = show(ident) if kind == "set" else \
                "map[string]interface {}{" + ", ".join(f"{show(k)}:{show(v)}" for k, v in ident.items()) + "}"
            out.append(FieldError(f"{path}[{i}]", "FieldValueDuplicate", shown))
        else:
            seen.append(ident)
    return out


def validate(value: Any, schema: Schema, path: str = "", old: Any = MISSING, root: bool = False) -> list[FieldError]:
    """Every value error under `value`; with `old` (the stored value at the same place), unchanged subtrees pass."""
    if old is not MISSING and value == old:
        return []  # validation ratcheting
    if value is None:
        if schema.get("nullable") or not (schema.get("type") or schema.get("x-kubernetes-int-or-string")):
            return []
        want = schema.get("type") or "string"
        return [type_invalid(path, "null", f"{path} in body must be of type {want}: \"null\"")]
    if not _type_ok(value, schema):
        want = schema.get("type") or "integer or string"
        return [type_invalid(path, value, f"{path} in body must be of type {want}: {show(type_of(value))}")]
    if isinstance(value, dict):
        return _object_errors(value, schema, path, old, root)
    if isinstance(value, list):
        out = _count_errors(value, schema, path) + _duplicate_errors(value, schema, path)
        items = schema.get("items")
        if isinstance(items, dict):
            olds = old if isinstance(old, list) else []
            for i, item in enumerate(value):
                prev = olds[i] if i < len(olds) else MISSING
                out.extend(validate(item, items, f"{path}[{i}]", prev))
        return out
    return _scalar_errors(value, schema, path)


def _object_errors(value: dict[str, Any], schema: Schema, path: str, old: Any, root: bool) -> list[FieldError]:
    out = _count_errors(value, schema, path) if not root else []
    olds = old if isinstance(old, dict) else {}
    for key in schema.get("required") or []:
        if key not in value:
            out.append(FieldError(child_path(path, key), "FieldValueRequired", ""))
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if root and key in ROOT_META:
            continue
        sub = props.get(key) if key in props else (extra if isinstance(extra, dict) else None)
        if sub is not None:
            sub_path = child_path(path, key) if key in props else f"{path}[{key}]"
            out.extend(validate(item, sub, sub_path, olds.get(key, MISSING)))
    return out
