"""The three PATCH flavours a Kubernetes client sends: JSON merge (RFC 7386), strategic merge, JSON patch (RFC 6902).

Strategic merge follows the patch strategies of the core types for the lists nodeflow and kubectl touch:
finalizers merge as a set, conditions / addresses / containers / ownerReferences merge by key, and
taints and tolerations are replaced whole (they have no merge key in the Kubernetes types).
"""

from __future__ import annotations

from typing import Any

from simulator.errors import ApiError, bad_request


def deep_copy(value: Any) -> Any:
    """A fast deep copy for JSON-shaped values."""
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# Field name -> merge key for lists of objects merged element-wise (patchStrategy:"merge").
MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "addresses": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}
# Lists of scalars merged as sets (patchStrategy:"merge").
PRIMITIVE_MERGE_LISTS = frozenset({"finalizers"})


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch to a JSON object."""
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    return _smp_map(target if isinstance(target, dict) else {}, patch)


def _smp_map(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: deep_copy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    result = dict(target)
    for key, value in patch.items():
        if key == "$patch" or key.startswith("$setElementOrder/") or key == "$retainKeys":
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            drop = set(value or [])
            result[field] = [v for v in result.get(field) or [] if v not in drop]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            cur = result.get(key)
            merged = _smp_map(cur if isinstance(cur, dict) else {}, value)
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _smp_list(key, result.get(key), value)
        else:
            result[key] = value
    return result


def _smp_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current = current if isinstance(current, list) else []
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [deep_copy(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    if field in PRIMITIVE_MERGE_LISTS:
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(item)
        return out
    merge_key = MERGE_KEYS.get(field)
    if merge_key is None or not all(isinstance(p, dict) for p in patch):
        return [deep_copy(p) for p in patch]
    out = [deep_copy(c) for c in current]
    for item in patch:
        key_value = item.get(merge_key)
        index = next((i for i, c in enumerate(out) if isinstance(c, dict) and c.get(merge_key) == key_value), None)
        if item.get("$patch") == "delete":
            if index is not None:
                out.pop(index)
            continue
        if index is None:
            out.append(_smp_map({}, item))
        else:
            out[index] = _smp_map(out[index], item)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _container(doc: Any, tokens: list[str]) -> tuple[Any, str]:
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict):
            if tok not in cur:
                raise ApiError(422, f"the server rejected our request due to an error in our request: "
                                    f"missing path element {tok!r}")
            cur = cur[tok]
        elif isinstance(cur, list):
            try:
                cur = cur[int(tok)]
            except (ValueError, IndexError) as exc:
                raise ApiError(422, f"invalid list index {tok!r}") from exc
        else:
            raise ApiError(422, f"cannot descend into {tok!r}")
    return cur, tokens[-1]


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent, last = _container(doc, tokens)
    try:
        return parent[int(last)] if isinstance(parent, list) else parent[last]
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise ApiError(422, f"path /{'/'.join(tokens)} not found") from exc


def _remove(doc: Any, tokens: list[str]) -> Any:
    parent, last = _container(doc, tokens)
    try:
        return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise ApiError(422, f"unable to remove nonexistent key: /{'/'.join(tokens)}") from exc


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _container(doc, tokens)
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                idx = int(last)
            except ValueError as exc:
                raise ApiError(422, f"invalid list index {last!r}") from exc
            if idx < 0 or idx > len(parent):
                raise ApiError(422, f"list index {idx} out of range")
            parent.insert(idx, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise ApiError(422, f"cannot add at /{'/'.join(tokens)}")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 operations on a copy of `target`."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = deep_copy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation {op!r}")
        kind, tokens = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, tokens, deep_copy(op.get("value")))
        elif kind == "remove":
            _remove(doc, tokens)
        elif kind == "replace":
            _get(doc, tokens)
            if not tokens:
                doc = deep_copy(op.get("value"))
            else:
                parent, last = _container(doc, tokens)
                if isinstance(parent, list):
                    parent[int(last)] = deep_copy(op.get("value"))
                else:
                    parent[last] = deep_copy(op.get("value"))
        elif kind == "move":
            value = _remove(doc, _pointer(op.get("from", "")))
            doc = _add(doc, tokens, value)
        elif kind == "copy":
            doc = _add(doc, tokens, deep_copy(_get(doc, _pointer(op.get("from", "")))))
        elif kind == "test":
            if _get(doc, tokens) != op.get("value"):
                raise ApiError(422, f"test operation failed at {op['path']}")
        else:
            raise bad_request(f"unknown json patch operation {kind!r}")
    return doc
