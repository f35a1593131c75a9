"""The `x-kubernetes-validations` CEL rules of a CRD, evaluated on every create and update of its custom
resources as kube-apiserver does (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go):
each rule runs with `self` bound to the value at its schema node (a string with `format: date`/`date-time`
as a timestamp, `format: duration` as a duration), at the root with only `metadata.name`/`generateName`;
a transition rule (one that reads `oldSelf`) runs only on an update where the old value correlates (same object
field, same map key, same list-map keys), and a rule on a value equal to the stored one is not run again
(validation ratcheting). A false result answers the rule's `messageExpression`, else its `message`, else
`failed rule: <rule>`, at the node's path plus the rule's `fieldPath`, as the rule's `reason` says.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from functools import cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from simulator.cel_library import KUBERNETES_FUNCTIONS
from simulator.crd_field_errors import FieldError
from simulator.crd_schema import MISSING, ROOT_META, Schema, child_path

_ENV = celpy.Environment()
_FAST_ENV = celpy.Environment(runner_class=celpy.CompiledRunner)  # transpiled to Python: ~5x the interpreter


@dataclass(frozen=True)
class Rule:
    """One compiled x-kubernetes-validations entry."""

    rule: str
    program: Any
    message: str | None
    message_program: Any
    reason: str
    field_path: str
    transition: bool
    optional_old_self: bool


class RuleCompileError(ValueError):
    """A rule `celpy` cannot parse (the real server refuses such a CRD with `compilation failed`)."""


@cache
def compile_program(text: str) -> Any:
    """A rule as a runnable program: transpiled to Python where cel-python can, interpreted where it cannot."""
    try:
        tree = _ENV.compile(text)
    except celpy.CELParseError as exc:
        raise RuleCompileError(f"compilation failed: {exc}") from exc
    try:
        return _FAST_ENV.program(_FAST_ENV.compile(text), functions=KUBERNETES_FUNCTIONS)
    except Exception:  # cel-python's transpiler fails on some extension calls (split, find): interpret those
        return _ENV.program(tree, functions=KUBERNETES_FUNCTIONS)


def compile_rule(entry: dict[str, Any]) -> Rule:
    return _compile_rule(str(entry["rule"]), entry.get("message"), entry.get("messageExpression"),
                         entry.get("reason"), entry.get("fieldPath"), bool(entry.get("optionalOldSelf")))


@cache
def _compile_rule(text: str, message: str | None, message_expr: str | None, reason: str | None,
                  field_path: str | None, optional_old_self: bool) -> Rule:
    return Rule(rule=text, program=compile_program(text), message=message,
                message_program=compile_program(str(message_expr)) if message_expr else None,
                reason=str(reason or "FieldValueInvalid"), field_path=str(field_path or ""),
                transition="oldSelf" in text, optional_old_self=optional_old_self)


def to_cel(value: Any, schema: Schema | None) -> Any:
    """A decoded JSON value as CEL sees it under `schema` (Kubernetes' CEL type mapping)."""
    schema = schema or {}
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, dict):
        props, extra = schema.get("properties") or {}, schema.get("additionalProperties")
        return celtypes.MapType({celtypes.StringType(k): to_cel(v, props.get(k, extra if isinstance(extra, dict)
                                                                              else None)) for k, v in value.items()})
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None
        return celtypes.ListType([to_cel(v, items) for v in value])
    if isinstance(value, str):
        return _string(value, schema.get("format"))
    if isinstance(value, int) and schema.get("type") != "number":
        return celtypes.IntType(value)
    return celtypes.DoubleType(value)


def _string(value: str, fmt: str | None) -> Any:
    try:
        if fmt == "date":
            return celtypes.TimestampType(dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC))
        if fmt == "date-time":
            return celtypes.TimestampType(value)
        if fmt == "duration":
            return celtypes.DurationType(value)
    except (ValueError, TypeError):
        pass  # a malformed value: the structural check reports it; CEL sees the string
    return celtypes.StringType(value)


def _root_self(value: dict[str, Any], schema: Schema) -> Any:
    """The root object as a rule sees it: metadata only `name` and `generateName`."""
    meta = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
    shown = dict(value, metadata={k: meta[k] for k in ("name", "generateName") if k in meta})
    return to_cel(shown, {**schema, "properties": {k: v for k, v in (schema.get("properties") or {}).items()
                                                   if k != "metadata"}})


def _truthy(result: Any) -> bool | CELEvalError:
    if isinstance(result, CELEvalError):
        return result
    return bool(result)


def _message(rule: Rule, activation: dict[str, Any]) -> str:
    if rule.message_program is not None:
        try:
            text = rule.message_program.evaluate(activation)
            if isinstance(text, str) and text.strip():
                return str(text)
        except CELEvalError:
            pass  # the real server falls back to `message` too
    return rule.message or f"failed rule: {rule.rule}"


def _error(rule: Rule, path: str, schema: Schema, text: str) -> FieldError:
    field = (path + rule.field_path).lstrip(".") if rule.field_path else path  # fieldPath: ".a.b" or "['k']"
    field = field or "<nil>"  # how the real server prints the root's (empty) path
    type_name = schema.get("type") or ""
    if rule.reason in ("FieldValueForbidden", "FieldValueRequired"):
        return FieldError(field, rule.reason, text)
    return FieldError(field, rule.reason if rule.reason == "FieldValueDuplicate" else "FieldValueInvalid",
                      f'"{type_name}": {text}')


_PASSED: dict[tuple[int, str, str, str], bool] = {}  # (schema node, rule, self, oldSelf) that passed: a memo
_PASSED_MAX = 20_000


def _key(value: Any) -> str:
    return "" if value is MISSING else json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _run_rules(value: Any, old: Any, schema: Schema, path: str, root: bool) -> list[FieldError]:
    """The failed rules of one schema node. Rules are pure functions of self and oldSelf, so a pass is memoized
    (a simulated cluster writes the same shapes over and over; cel-python takes milliseconds per rule)."""
    out: list[FieldError] = []
    entries = schema.get("x-kubernetes-validations") or []
    activation: dict[str, Any] | None = None
    for entry in entries:
        rule = compile_rule(entry)
        if rule.transition and old is MISSING:
            continue  # a transition rule needs a correlated old value (optionalOldSelf: not modelled)
        if not rule.transition and old is not MISSING and value == old:
            continue  # ratcheting: unchanged values are not validated again
        memo = (id(schema), rule.rule, _key(value), _key(old) if rule.transition else "")
        if memo in _PASSED:
            continue
        if activation is None:
            activation = {"self": _root_self(value, schema) if root else to_cel(value, schema)}
            if old is not MISSING:
                activation["oldSelf"] = _root_self(old, schema) if root else to_cel(old, schema)
        try:
            ok = _truthy(rule.program.evaluate(activation))
        except CELEvalError as exc:
            ok = exc
        if ok is True:
            if len(_PASSED) >= _PASSED_MAX:
                _PASSED.clear()
            _PASSED[memo] = True
            continue
        text = _message(rule, activation)
        if isinstance(ok, CELEvalError):
            text = f"{text}: evaluation error: {ok.args[0] if ok.args else ok}"
        out.append(_error(rule, path, schema, text))
    return out


def _correlate_items(value: list[Any], old: Any, schema: Schema) -> list[Any]:
    """The old element of each element: by the list-map keys for `x-kubernetes-list-type: map`, the equal element
    for `set`, none for an atomic list (as the real server, which cannot pair the elements of those)."""
    if not isinstance(old, list):
        return [MISSING] * len(value)
    if old == value:
        return list(old)  # an unchanged list, atomic or not, is ratcheted as a whole
    kind = schema.get("x-kubernetes-list-type")
    if kind == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []

        def key(x: Any) -> Any:
            return tuple((x or {}).get(k) for k in keys) if isinstance(x, dict) else None

        by_key = {key(o): o for o in old}
        return [by_key.get(key(v), MISSING) for v in value]
    if kind == "set":
        return [v if v in old else MISSING for v in value]
    return [MISSING] * len(value)


def evaluate(value: Any, schema: Schema, path: str = "", old: Any = MISSING, root: bool = False) -> list[FieldError]:
    """Every failed rule at or under `value` (None and absent values run no rules, as in the real server)."""
    if value is None:
        return []
    out = _run_rules(value, old, schema, path, root)
    if isinstance(value, dict):
        props, extra = schema.get("properties") or {}, schema.get("additionalProperties")
        olds = old if isinstance(old, dict) else {}
        for key, item in value.items():
            if root and key in ROOT_META:
                continue
            if key in props:
                out.extend(evaluate(item, props[key], child_path(path, key), olds.get(key, MISSING)))
            elif isinstance(extra, dict):
                out.extend(evaluate(item, extra, f"{path}[{key}]", olds.get(key, MISSING)))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, (item, prev) in enumerate(zip(value, _correlate_items(value, old, schema), strict=True)):
            out.extend(evaluate(item, schema["items"], f"{path}[{i}]", prev))
    return out
