"""What kube-apiserver does to a custom resource before it stores it, and to a CRD before it serves it.

A custom resource (create, update, patch, status): unknown fields pruned, defaults applied, the structural
schema's value checks (simulator/crd_schema.py), then every `x-kubernetes-validations` rule (simulator/crd_cel.py)
unless a blocking schema error (type, required, enum, maxLength, maxItems/maxProperties) was found, when the rules
are skipped and kube-apiserver's "some validation rules were not checked" cause is added at the root; any error
answers 422 Invalid with one cause per field. The schemas are those of the CRDs
nodeflow ships (deploy/crds/), not of a CRD object stored in the simulator.
A CustomResourceDefinition (create, update): each rule must compile, select only fields its schema declares
(the real server type-checks rules; cel-python does not) and pass kube-apiserver's cost check
(simulator/cel_cost.py), else 422 Invalid at `spec.validation.openAPIV3Schema....rule`, as the real server
refused our DisruptionPolicy CRD.
"""

from __future__ import annotations

import copy
from typing import Any

from simulator import cel_cost
from simulator.crd_cel import RuleCompileError, compile_rule, evaluate
from simulator.crd_field_errors import BLOCKING_REASONS, FieldError, refused, rules_not_checked
from simulator.crd_schema import MISSING, apply_defaults, prune, validate
from simulator.resources import ResourceType
from simulator.schemas import crd_validation_schemas

CRD_KIND, CRD_GROUP = "CustomResourceDefinition", "apiextensions.k8s.io"


def admit(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    """`obj` pruned and defaulted (in place; returned) when it is valid for its CRD; raises the 422 otherwise.
    `old` (the stored object, on an update) enables transition rules and ratcheting."""
    schema = crd_validation_schemas().get((rt.group, rt.version, rt.kind))
    if schema is None:
        return obj
    prune(obj, schema, root=True)
    apply_defaults(obj, schema)
    prev: Any = MISSING if old is None else as_read(rt, old)
    errors = validate(obj, schema, "", prev, root=True)
    if any(e.reason in BLOCKING_REASONS for e in errors):  # a type/required/enum/max error: no rule runs
        errors.append(rules_not_checked())
    else:  # after a pattern, minimum, minLength, minItems ... error every rule still runs, as in kube-apiserver
        errors.extend(evaluate(obj, schema, "", prev, root=True))
    if errors:
        raise refused(rt.kind, rt.group, str((obj.get("metadata") or {}).get("name") or ""), errors)
    return obj


def as_read(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as the real server reads it from storage: with its CRD's defaults (a copy; `obj` when none apply).
    Objects the simulator seeds into its store skip admission, so an update compares against this view."""
    schema = crd_validation_schemas().get((rt.group, rt.version, rt.kind)) if rt.custom else None
    return obj if schema is None else apply_defaults(copy.deepcopy(obj), schema)


def _rule_errors(schema: dict[str, Any], prefix: str) -> list[FieldError]:
    out: list[FieldError] = []
    stack: list[tuple[dict[str, Any], str]] = [(schema, prefix)]
    while stack:
        node, path = stack.pop()
        for i, entry in enumerate(node.get("x-kubernetes-validations") or []):
            where = f"{path}.x-kubernetes-validations[{i}].rule"
            try:
                compile_rule(entry)
            except (RuleCompileError, KeyError) as exc:
                out.append(FieldError(where, "FieldValueInvalid", f'"{entry.get("rule", "")}": {exc}'))
                continue
            for name in cel_cost.undefined_fields(str(entry["rule"]), node):
                out.append(FieldError(where, "FieldValueInvalid",
                                      f'"{entry["rule"]}": compilation failed: undefined field \'{name}\''))
        stack.extend((sub, f"{path}.properties[{k}]") for k, sub in (node.get("properties") or {}).items())
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                stack.append((node[key], f"{path}.{key}"))
    return out


def check_crd(crd: dict[str, Any]) -> None:
    """Raise the 422 kube-apiserver answers for a CRD whose rules do not compile or cost too much."""
    versions = ((crd.get("spec") or {}).get("versions")) or []
    errors: list[FieldError] = []
    for i, version in enumerate(versions if isinstance(versions, list) else []):
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")) if isinstance(version, dict) else None
        if isinstance(schema, dict):
            prefix = "spec.validation.openAPIV3Schema" if len(versions) == 1 else \
                f"spec.versions[{i}].schema.openAPIV3Schema"
            errors.extend(_rule_errors(schema, prefix))
    if not errors:
        errors = [FieldError(f.field, "FieldValueForbidden", f.detail) for f in cel_cost.crd_findings(crd)]
    if errors:
        raise refused(CRD_KIND, CRD_GROUP, str((crd.get("metadata") or {}).get("name") or ""), errors)
