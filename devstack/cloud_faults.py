"""The EC2 stand-in's fault knob: answer a fraction, or a scripted number, of chosen EC2 calls with an EC2 error.

The cloud's own failures (docs/reliability.md#the-clouds-own-failures), as the simulator's `inject_faults` is the
API server's: throttling (`RequestLimitExceeded`), no capacity for an offering (`InsufficientInstanceCapacity`,
matched on the request's InstanceType and zone), and refused credentials (`UnauthorizedOperation`). A refused
call never reaches moto, so it changes nothing, as EC2's own refusals do.

Tests turn it on over HTTP on the stand-in's own port (`set_faults(endpoint, [FaultRule(...)])`, `clear_faults`,
`fault_counts`); `install()` (run by `devstack.moto_indexed.main`) wraps moto's server dispatcher. A rule matches
an EC2 Query action and, optionally, form parameters; it fires on each matching call with probability `rate`
(from a seeded generator, so a run repeats), at most `times` times when given.
"""

from __future__ import annotations

import io
import json
import random
import threading
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import parse_qs

PATH = "/_nodeflow/faults"
STATUS = {"RequestLimitExceeded": 503, "UnauthorizedOperation": 403}  # others: 400
MESSAGES = {
    "RequestLimitExceeded": "Request limit exceeded.",
    "InsufficientInstanceCapacity": "We currently do not have sufficient capacity in the Availability Zone you "
                                    "requested.",
    "UnauthorizedOperation": "You are not authorized to perform this operation.",
}


@dataclass
class FaultRule:
    """Answer `action` calls whose form parameters include `params` with EC2 error `code`."""

    action: str
    code: str
    rate: float = 1.0
    times: int | None = None
    params: dict[str, str] = field(default_factory=dict)


class Faults:
    """The rules in force and what they did (per action: calls seen, errors injected)."""

    def __init__(self) -> None:
        self.rules: list[FaultRule] = []
        self.active = False  # set (even with no rules): calls are counted; cleared: requests pass untouched
        self.fired: list[int] = []
        self.calls: dict[str, int] = {}
        self.injected: dict[str, int] = {}
        self.by_code: dict[str, int] = {}
        self.rng = random.Random(0)
        self.lock = threading.Lock()

    def configure(self, doc: dict[str, Any], active: bool = True) -> None:
        with self.lock:
            self.active = active
            self.rules = [FaultRule(**r) for r in doc.get("rules") or []]
            self.fired = [0] * len(self.rules)
            self.calls, self.injected, self.by_code = {}, {}, {}
            self.rng = random.Random(doc.get("seed", 0))

    def report(self) -> dict[str, Any]:
        with self.lock:
            return {"rules": [asdict(r) for r in self.rules], "calls": dict(self.calls),
                    "injected": dict(self.injected), "injectedByCode": dict(self.by_code)}

    def decide(self, form: dict[str, str]) -> str | None:
        """The error code to answer this call with, or None to let moto answer it."""
        action = form.get("Action", "")
        with self.lock:
            self.calls[action] = self.calls.get(action, 0) + 1
            for i, rule in enumerate(self.rules):
                if rule.action != action or any(form.get(k) != v for k, v in rule.params.items()):
                    continue
                if rule.times is not None and self.fired[i] >= rule.times:
                    continue
                if self.rng.random() >= rule.rate:
                    continue
                self.fired[i] += 1
                self.injected[action] = self.injected.get(action, 0) + 1
                self.by_code[rule.code] = self.by_code.get(rule.code, 0) + 1
                return rule.code
        return None


FAULTS = Faults()


def error_body(code: str) -> bytes:
    """EC2's Query-protocol error document (what botocore's ec2 parser reads)."""
    message = MESSAGES.get(code, code)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error></Errors><RequestID>{uuid.uuid4()}</RequestID></Response>"
            ).encode()


def _respond(start_response: Any, status: int, body: bytes, content_type: str) -> list[bytes]:
    start_response(f"{status} {'OK' if status == 200 else 'Error'}",
                   [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]


def _control(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """GET: the report; PUT/POST: replace the rules (JSON {"rules": [...], "seed": n}); DELETE: none."""
    method = environ.get("REQUEST_METHOD", "GET")
    if method in ("PUT", "POST"):
        size = int(environ.get("CONTENT_LENGTH") or 0)
        FAULTS.configure(json.loads(environ["wsgi.input"].read(size) or b"{}"))
    elif method == "DELETE":
        FAULTS.configure({}, active=False)
    return _respond(start_response, 200, json.dumps(FAULTS.report()).encode(), "application/json")


def _ec2_form(environ: dict[str, Any]) -> dict[str, str] | None:
    """The form of an EC2 Query request (the body put back for moto), or None for any other request."""
    if environ.get("REQUEST_METHOD") != "POST" or "x-www-form-urlencoded" not in environ.get("CONTENT_TYPE", ""):
        return None
    size = int(environ.get("CONTENT_LENGTH") or 0)
    if size <= 0:  # chunked or empty: leave the body to moto, unread
        return None
    body = environ["wsgi.input"].read(size)
    environ["wsgi.input"] = io.BytesIO(body)
    form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
    return form if form.get("Version", "").startswith("20") and "Action" in form else None


def install() -> None:
    """Route the knob's path, and EC2 calls a rule refuses, before moto's dispatcher (idempotent)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = getattr(DomainDispatcherApplication.__call__, "__wrapped_faults__", DomainDispatcherApplication.__call__)

    def __call__(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == PATH:
            return _control(environ, start_response)
        form = _ec2_form(environ) if FAULTS.active else None
        code = FAULTS.decide(form) if form is not None else None
        if code is not None:
            return _respond(start_response, STATUS.get(code, 400), error_body(code), "text/xml")
        return original(self, environ, start_response)

    __call__.__wrapped_faults__ = original  # type: ignore[attr-defined]
    DomainDispatcherApplication.__call__ = __call__  # type: ignore[method-assign]


# ---- the tests' side ----------------------------------------------------------------------------------------


def _request(endpoint: str, method: str, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(doc).encode() if doc is not None else None
    req = urllib.request.Request(endpoint.rstrip("/") + PATH, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def set_faults(endpoint: str, rules: list[FaultRule], seed: int = 0) -> dict[str, Any]:
    """Replace the stand-in's rules and zero its counts; with no rules, it only counts calls."""
    return _request(endpoint, "PUT", {"rules": [asdict(r) for r in rules], "seed": seed})


def clear_faults(endpoint: str) -> dict[str, Any]:
    """No rules, no counting: every request passes untouched."""
    return _request(endpoint, "DELETE")


def fault_counts(endpoint: str) -> dict[str, Any]:
    """{"rules": [...], "calls": {action: n}, "injected": {action: n}, "injectedByCode": {code: n}} since the
    rules were set."""
    return _request(endpoint, "GET")
