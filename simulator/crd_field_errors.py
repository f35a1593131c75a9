"""Field errors of a refused custom resource, worded and shaped as kube-apiserver's field.Error
(k8s.io/apimachinery/pkg/util/validation/field/errors.go) and aggregated into one 422 `Status` with
`details.causes[].field/message/reason`, so a client that reads the causes sees what a real cluster sends."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from simulator.errors import ApiError

# field.ErrorType -> what its message starts with
_BODIES = {
    "FieldValueInvalid": "Invalid value",
    "FieldValueRequired": "Required value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueTypeInvalid": "Invalid value",
}


def show(value: Any) -> str:
    """A value as field.Error prints it: strings quoted, numbers bare, anything else by its JSON."""
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class FieldError:
    """One cause: where (`field`), the error type (`reason`), and the text after the error type's words."""

    field: str
    reason: str
    detail: str

    @property
    def body(self) -> str:
        head = _BODIES.get(self.reason, "Invalid value")
        return f"{head}: {self.detail}" if self.detail else head

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"


# The error types kube-apiserver treats as blocking for CEL (apiextensions-apiserver's customresource strategy,
# `hasBlockingErr`): after one of these no x-kubernetes-validations rule runs; after any other (pattern, minimum,
# minLength, minItems, duplicates ...) every rule still runs and each failure is one more cause.
BLOCKING_REASONS = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
                              "FieldValueTooMany", "FieldValueTypeInvalid"})
# What it appends instead of running the rules: field.Invalid(nil, nil, ...), a nil path printed `<nil>` and a nil
# value printed `"null"` (apimachinery before 1.34; 1.34+ prints it unquoted, `Invalid value: null: ...`).
RULES_NOT_CHECKED = "some validation rules were not checked because the object was invalid; correct the existing " \
                    "errors to complete validation"


def rules_not_checked() -> FieldError:
    """The cause kube-apiserver adds, at the root, when a blocking schema error kept the rules from running."""
    return FieldError("<nil>", "FieldValueInvalid", f'"null": {RULES_NOT_CHECKED}')


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(field, "FieldValueInvalid", f"{show(value)}: {detail}")


def type_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(field, "FieldValueTypeInvalid", f"{show(value)}: {detail}")


def refused(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    """The 422 Invalid answer for `errors` (one or more), as the API server aggregates them."""
    qualified = f"{kind}.{group}" if group else kind
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    causes = [{"reason": e.reason, "message": e.body, "field": e.field} for e in errors]
    return ApiError(422, f'{qualified} "{name}" is invalid: {listed}',
                    details={"name": name, "group": group, "kind": kind, "causes": causes})
