"""Label selectors (`a=b,c!=d,e in (x,y),!f`) and field selectors (`spec.nodeName=n`), parsed once, matched often."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from simulator.errors import bad_request

LabelPredicate = Callable[[dict[str, str]], bool]

_SET_RE = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s+(in|notin)\s+\((.*)\)\s*$")


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text: str | None) -> LabelPredicate | None:
    """A predicate over a labels dict, or None when the selector is empty (matches everything)."""
    if not text or not text.strip():
        return None
    preds: list[LabelPredicate] = []
    for req in _split_top_level(text):
        m = _SET_RE.match(req)
        if m:
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                preds.append(lambda ls, k=key, vs=values: ls.get(k) in vs)
            else:
                preds.append(lambda ls, k=key, vs=values: ls.get(k) not in vs)
        elif req.startswith("!"):
            key = req[1:].strip()
            preds.append(lambda ls, k=key: k not in ls)
        elif "!=" in req:
            key, value = (s.strip() for s in req.split("!=", 1))
            preds.append(lambda ls, k=key, v=value: ls.get(k) != v)
        elif "==" in req or "=" in req:
            key, value = (s.strip() for s in req.replace("==", "=", 1).split("=", 1))
            if not key:
                raise bad_request(f"unable to parse requirement: {req!r}")
            preds.append(lambda ls, k=key, v=value: ls.get(k) == v)
        elif re.fullmatch(r"[A-Za-z0-9./_-]+", req):
            preds.append(lambda ls, k=req: k in ls)
        else:
            raise bad_request(f"unable to parse requirement: {req!r}")
    return lambda labels: all(p(labels) for p in preds)


def match_label_selector_object(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Match a structured LabelSelector (matchLabels + matchExpressions). An empty selector matches everything."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string value of a dotted field path ("" when absent), as the API server compares it."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text: str | None) -> Callable[[dict[str, Any]], bool] | None:
    """A predicate over an object for `path=value`, `path==value`, `path!=value` terms joined by commas."""
    if not text or not text.strip():
        return None
    terms: list[tuple[str, bool, str]] = []
    for req in text.split(","):
        req = req.strip()
        if not req:
            continue
        if "!=" in req:
            path, value = req.split("!=", 1)
            terms.append((path.strip(), False, value.strip()))
        elif "=" in req:
            path, value = req.replace("==", "=", 1).split("=", 1)
            terms.append((path.strip(), True, value.strip()))
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{req}'")
    return lambda obj: all((field_value(obj, p) == v) == eq for p, eq, v in terms)


def exact_field(text: str | None, path: str) -> str | None:
    """The value of an equality term on `path` in a field selector, for index lookups."""
    if not text:
        return None
    for req in text.split(","):
        req = req.strip()
        if "!=" in req or "=" not in req:
            continue
        p, value = req.replace("==", "=", 1).split("=", 1)
        if p.strip() == path:
            return value.strip()
    return None
