"""The Kubernetes CEL library functions that `celpy` (cel-python) does not have, so every rule of the CRDs
nodeflow ships evaluates instead of being skipped.

What a real kube-apiserver adds to CEL (k8s.io/apiserver/pkg/cel/library and cel-go's ext.Strings, version 2
as Kubernetes configures it): the string extensions (`split`, `replace`, `lowerAscii`, `indexOf`, ...), the regex
library (`find`, `findAll`) and the list library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`).
`celpy` already has `matches`, `contains`, `startsWith`, `endsWith`, `size`, `duration` and `timestamp`.
Not here (docs/decisions.md, "Where the emulator differs from kube-apiserver"): `quantity`, `url`, `ip`, `cidr`,
`semver`, `format`, the authorizer and the optional-types library; a rule that calls one fails its evaluation with
"undeclared reference" and the write is refused, as nothing is silently skipped.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

Function = Callable[..., Any]


def _s(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return str(value)


def _split(target: Any, sep: Any, limit: Any = -1) -> celtypes.ListType:
    text, separator, n = _s(target), _s(sep), int(limit)
    if n == 0:
        return celtypes.ListType([])
    if separator == "":
        parts = list(text)
        if n > 0 and len(parts) > n:
            parts = [*parts[:n - 1], "".join(parts[n - 1:])]
    else:
        parts = text.split(separator, n - 1) if n > 0 else text.split(separator)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _replace(target: Any, old: Any, new: Any, limit: Any = -1) -> celtypes.StringType:
    n = int(limit)
    return celtypes.StringType(_s(target).replace(_s(old), _s(new), n if n >= 0 else -1))


def _index_of(target: Any, item: Any, start: Any = 0) -> celtypes.IntType:
    if isinstance(target, list):
        values = list(target)
        return celtypes.IntType(values.index(item) if item in values else -1)
    return celtypes.IntType(_s(target).find(_s(item), int(start)))


def _last_index_of(target: Any, item: Any, end: Any = None) -> celtypes.IntType:
    if isinstance(target, list):
        values = list(target)
        return celtypes.IntType(len(values) - 1 - values[::-1].index(item) if item in values else -1)
    text = _s(target)
    return celtypes.IntType(text.rfind(_s(item)) if end is None else text.rfind(_s(item), 0, int(end) + len(item)))


def _substring(target: Any, start: Any, end: Any = None) -> celtypes.StringType:
    text = _s(target)
    stop = len(text) if end is None else int(end)
    if not 0 <= int(start) <= stop <= len(text):
        raise IndexError(f"substring({start}, {stop}) out of range for a string of length {len(text)}")
    return celtypes.StringType(text[int(start):stop])


def _find(target: Any, pattern: Any) -> celtypes.StringType:
    m = re.search(_s(pattern), _s(target))
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(target: Any, pattern: Any, limit: Any = -1) -> celtypes.ListType:
    found = [m.group(0) for m in re.finditer(_s(pattern), _s(target))]
    n = int(limit)
    return celtypes.ListType([celtypes.StringType(x) for x in (found if n < 0 else found[:n])])


def _join(target: Any, sep: Any = "") -> celtypes.StringType:
    return celtypes.StringType(_s(sep).join(_s(x) for x in target))


def _is_sorted(target: Any) -> celtypes.BoolType:
    values = list(target)
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(values)))


def _sum(target: Any) -> Any:
    values = list(target)
    if not values:
        return celtypes.IntType(0)
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


def _extreme(pick: Callable[..., Any]) -> Function:
    def fn(target: Any) -> Any:
        values = list(target)
        if not values:
            raise ValueError("min/max of an empty list")
        return pick(values)
    return fn


def _guard(name: str, fn: Function) -> Function:
    """celpy expects a function to return a CELEvalError rather than raise (then `||` and `&&` can absorb it)."""
    def call(*args: Any) -> Any:
        for a in args:
            if isinstance(a, CELEvalError):
                return a
        try:
            return fn(*args)
        except (TypeError, ValueError, IndexError, re.error) as exc:
            return CELEvalError(f"{name}: {exc}", type(exc), exc.args)
    return call


KUBERNETES_FUNCTIONS: dict[str, Function] = {name: _guard(name, fn) for name, fn in {
    "split": _split,
    "replace": _replace,
    "lowerAscii": lambda t: celtypes.StringType(_s(t).lower()),
    "upperAscii": lambda t: celtypes.StringType(_s(t).upper()),
    "trim": lambda t: celtypes.StringType(_s(t).strip()),
    "charAt": lambda t, i: celtypes.StringType(_s(t)[int(i)] if int(i) < len(_s(t)) else ""),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "substring": _substring,
    "join": _join,
    "find": _find,
    "findAll": _find_all,
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _extreme(min),
    "max": _extreme(max),
}.items()}
