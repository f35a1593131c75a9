"""Server-side printing of custom resources from their CRD's additionalPrinterColumns, as kube-apiserver does.

apiextensions-apiserver's table convertor: a `Name` column first, then each printer column in order with its
type and priority; a cell is the first result of the column's JSONPath (nothing found: null, which kubectl
shows as `<none>`), `date` cells are turned into an age. The JSONPath subset here is what CRDs use: fields
(`.a.b`, with `\\.` for a dot inside a key such as a label name), `[n]` and `[?(@.field=="value")]` filters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from simulator.schemas import crd_documents

_TOKEN = re.compile(r'\.((?:\\.|[^.\[\\])+)|\[\?\(@\.([\w.-]+)\s*==\s*"([^"]*)"\)\]|\[(\d+)\]')


def evaluate(path: str, obj: Any) -> list[Any]:
    """Every value `path` selects in `obj` (empty when it selects nothing); ValueError for a path outside the
    subset."""
    values = [obj]
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {pos}")
        pos = m.end()
        field, filter_key, filter_value, index = m.groups()
        out: list[Any] = []
        for v in values:
            if field is not None and isinstance(v, dict):
                key = field.replace("\\.", ".")
                if key in v:
                    out.append(v[key])
            elif filter_key is not None and isinstance(v, list):
                out.extend(i for i in v if isinstance(i, dict) and str(i.get(filter_key)) == filter_value)
            elif index is not None and isinstance(v, list) and int(index) < len(v):
                out.append(v[int(index)])
        values = out
    return values


def columns_of(group: str, version: str, kind: str) -> list[dict[str, Any]] | None:
    """The printer columns deploy/crds/ declares for the kind (None: not a shipped CRD)."""
    for doc in crd_documents():
        spec = doc.get("spec") or {}
        if spec.get("group") != group or (spec.get("names") or {}).get("kind") != kind:
            continue
        for ver in spec.get("versions") or []:
            if ver.get("name") == version:
                return list(ver.get("additionalPrinterColumns") or [])
    return None


def _cell(column: dict[str, Any], obj: dict[str, Any], age: Callable[[str | None], str]) -> Any:
    found = evaluate(column["jsonPath"], obj)
    if not found or found[0] is None:
        return None
    value = found[0]
    if column.get("type") == "date":
        return age(str(value))
    if column.get("type") == "string" and not isinstance(value, str):
        return value if isinstance(value, (dict, list)) else str(value)
    return value


def table(columns: list[dict[str, Any]], objects: list[dict[str, Any]],
          age: Callable[[str | None], str]) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """(columnDefinitions, cells per object): Name, then the printer columns (Age when the CRD declares none)."""
    if not columns:
        columns = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    defs = [{"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a "
             "namespace.", "priority": 0}]
    defs += [{"name": c["name"], "type": c.get("type", "string"), "format": c.get("format", ""),
              "description": c.get("description", ""), "priority": int(c.get("priority", 0))} for c in columns]
    rows = [[(o.get("metadata") or {}).get("name", ""), *(_cell(c, o, age) for c in columns)] for o in objects]
    return defs, rows
