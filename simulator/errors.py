"""Kubernetes `Status` error bodies, so clients see the same codes, reasons and messages as from a real API server."""

from __future__ import annotations

from typing import Any

REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


class ApiError(Exception):
    """An error answered as a `Status` object with an HTTP code."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(404, f'{qualified} "{name}" not found',
                    details={"name": name, "group": group, "kind": resource})


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(409, f'{qualified} "{name}" already exists', reason="AlreadyExists",
                    details={"name": name, "group": group, "kind": resource})


def conflict(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(409, f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
                    "please apply your changes to the latest version and try again",
                    details={"name": name, "group": group, "kind": resource})


def invalid(kind: str, name: str, message: str, group: str = "") -> ApiError:
    return ApiError(422, f'{kind} "{name}" is invalid: {message}',
                    details={"name": name, "group": group, "kind": kind, "causes": [{"message": message}]})


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def success_status(name: str, kind: str, group: str = "", uid: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "group": group, "kind": kind}
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
