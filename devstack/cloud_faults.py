"""The EC2 stand-in's fault knob: answer a fraction, or a scripted number, of chosen EC2 calls with an EC2 error.

The cloud's own failures (docs/reliability.md#the-clouds-own-failures), as the simulator's `inject_faults` is the
API server's: throttling (`RequestLimitExceeded`), no capacity for an offering (`InsufficientInstanceCapacity`,
matched on the request's InstanceType and zone), and refused credentials (`UnauthorizedOperation`). A refused
call never reaches moto, so it changes nothing, as EC2's own refusals do.

Tests turn it on over HTTP on the stand-in's own port (`set_faults(endpoint, [FaultRule(...)])`, `clear_faults`,
`fault_counts`); `install()` (run by `devstack.moto_indexed.main`) wraps moto's server dispatcher. A rule matches
an EC2 Query action and, optionally, form parameters; it fires on each matching call with probability `rate`
(from a seeded generator, so a run repeats), at most `times` times when given.

CreateFleet with a capacity code (`FLEET_OVERRIDE_CODES`) is EC2's partial answer instead: the rule matches each
override (its `params` against the override's fields, e.g. `{"InstanceType": "m5.large"}`), and each override it
fires on leaves the request and comes back in the answer's `Errors` (HTTP 200), beside the instance moto launches
from the overrides left, or alone (no instance) when none is left, as EC2 answers an instant fleet.

`delay_ms` holds chosen actions that long before they are answered (refused or not), since moto answers in
milliseconds where EC2 takes about a second to launch: a benchmark comparing launch APIs end to end
(bench/scale_out_ice.py) needs each call to cost what it costs.
"""

from __future__ import annotations

import io
import json
import random
import threading
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode
from xml.sax.saxutils import escape

from simulator.ice import fleet_configs, fleet_form

PATH = "/_nodeflow/faults"
STATUS = {"RequestLimitExceeded": 503, "UnauthorizedOperation": 403}  # others: 400
MESSAGES = {
    "RequestLimitExceeded": "Request limit exceeded.",
    "InsufficientInstanceCapacity": "We currently do not have sufficient capacity in the Availability Zone you "
                                    "requested.",
    "UnauthorizedOperation": "You are not authorized to perform this operation.",
}
# CreateFleet answers these per override, beside the fleet's instances (HTTP 200), not as the call's error.
FLEET_OVERRIDE_CODES = frozenset({"InsufficientInstanceCapacity", "UnfulfillableCapacity", "Unsupported",
                                  "ReservationCapacityExceeded"})
EC2_XMLNS = "http://ec2.amazonaws.com/doc/2016-11-15/"


def per_override(rule: FaultRule) -> bool:
    """A rule that refuses single overrides of a CreateFleet rather than the whole call."""
    return rule.action == "CreateFleet" and rule.code in FLEET_OVERRIDE_CODES


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
        self.delays: dict[str, float] = {}  # action -> seconds held before it is answered
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
            self.delays = {a: float(ms) / 1000 for a, ms in (doc.get("delayMs") or {}).items()}

    def report(self) -> dict[str, Any]:
        with self.lock:
            return {"rules": [asdict(r) for r in self.rules], "calls": dict(self.calls),
                    "delayMs": {a: s * 1000 for a, s in self.delays.items()},
                    "injected": dict(self.injected), "injectedByCode": dict(self.by_code)}

    def delay(self, action: str) -> float:
        """Seconds to hold a call of `action` before answering it (0 unless `delayMs` names it)."""
        with self.lock:
            return self.delays.get(action, 0.0)

    def decide(self, form: dict[str, str]) -> str | None:
        """The error code to answer this call with, or None to let moto answer it."""
        action = form.get("Action", "")
        with self.lock:
            self.calls[action] = self.calls.get(action, 0) + 1
            for i, rule in enumerate(self.rules):
                if rule.action != action or per_override(rule):
                    continue
                if self._fires(i, form):
                    self.injected[action] = self.injected.get(action, 0) + 1
                    self.by_code[rule.code] = self.by_code.get(rule.code, 0) + 1
                    return rule.code
        return None

    def _fires(self, i: int, fields: dict[str, str]) -> bool:
        """Rule i matches `fields` and fires this time (its rate drawn, its `times` not used up); lock held."""
        rule = self.rules[i]
        if any(fields.get(k) != v for k, v in rule.params.items()):
            return False
        if rule.times is not None and self.fired[i] >= rule.times:
            return False
        if self.rng.random() >= rule.rate:
            return False
        self.fired[i] += 1
        return True

    def refuse_overrides(self, form: dict[str, str]) -> tuple[list[dict[str, Any]], dict[str, str]] | None:
        """A CreateFleet's overrides the per-override rules refuse, as EC2 errors, and the form without them
        (renumbered); None when no rule fires on any override."""
        configs = fleet_configs(form)
        spot = form.get("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot"
        errors: list[dict[str, Any]] = []
        with self.lock:
            for cfg in configs:
                kept = []
                for override in cfg["overrides"]:
                    code = next((r.code for i, r in enumerate(self.rules)
                                 if per_override(r) and self._fires(i, override)), None)
                    if code is None:
                        kept.append(override)
                    else:
                        errors.append({"spec": cfg["spec"], "override": override, "code": code, "spot": spot})
                cfg["overrides"] = kept
            if errors:
                self.injected["CreateFleet"] = self.injected.get("CreateFleet", 0) + len(errors)
                for e in errors:
                    self.by_code[e["code"]] = self.by_code.get(e["code"], 0) + 1
        if not errors:
            return None
        rest = {k: v for k, v in form.items() if not k.startswith("LaunchTemplateConfigs.")}
        return errors, {**rest, **fleet_form([c for c in configs if c["overrides"]])}


FAULTS = Faults()


def error_body(code: str) -> bytes:
    """EC2's Query-protocol error document (what botocore's ec2 parser reads)."""
    message = MESSAGES.get(code, code)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error></Errors><RequestID>{uuid.uuid4()}</RequestID></Response>"
            ).encode()


def _camel(key: str) -> str:
    return key[:1].lower() + key[1:]


def fleet_error_items(errors: list[dict[str, Any]]) -> str:
    """The `errorSet` items of a CreateFleet answer (botocore's CreateFleetError, in EC2's XML)."""
    items = []
    for e in errors:
        prefix = "LaunchTemplateSpecification."
        spec = "".join(f"<{_camel(k[len(prefix):])}>{escape(str(v))}</{_camel(k[len(prefix):])}>"
                       for k, v in e["spec"].items() if k.startswith(prefix))
        override = "".join(f"<{_camel(k)}>{escape(str(v))}</{_camel(k)}>" for k, v in e["override"].items()
                           if "." not in k)
        itype, zone = e["override"].get("InstanceType", ""), e["override"].get("AvailabilityZone", "")
        message = MESSAGES.get(e["code"], e["code"]) if e["code"] != "InsufficientInstanceCapacity" else (
            f"We currently do not have sufficient {itype} capacity in the Availability Zone you requested ({zone}).")
        items.append(f"<item><launchTemplateAndOverrides><launchTemplateSpecification>{spec}"
                     f"</launchTemplateSpecification><overrides>{override}</overrides></launchTemplateAndOverrides>"
                     f"<lifecycle>{'spot' if e['spot'] else 'on-demand'}</lifecycle><errorCode>{e['code']}"
                     f"</errorCode><errorMessage>{escape(message)}</errorMessage></item>")
    return "".join(items)


def no_instance_body(errors: list[dict[str, Any]]) -> bytes:
    """EC2's answer to an instant fleet none of whose overrides launched: errors, no instance, HTTP 200."""
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<CreateFleetResponse xmlns="{EC2_XMLNS}"><requestId>'
            f"{uuid.uuid4()}</requestId><fleetId>fleet-{uuid.uuid4()}</fleetId><errorSet>"
            f"{fleet_error_items(errors)}</errorSet><fleetInstanceSet/></CreateFleetResponse>").encode()


def with_errors(body: bytes, errors: list[dict[str, Any]]) -> bytes:
    """moto's CreateFleet answer with `errors` added to its errorSet (made when it has none)."""
    text, items = body.decode(), fleet_error_items(errors)
    for empty in ("<errorSet/>", "<errorSet />", "<errorSet></errorSet>"):
        if empty in text:
            return text.replace(empty, f"<errorSet>{items}</errorSet>", 1).encode()
    if "</errorSet>" in text:
        return text.replace("</errorSet>", f"{items}</errorSet>", 1).encode()
    return text.replace("</CreateFleetResponse>", f"<errorSet>{items}</errorSet></CreateFleetResponse>", 1).encode()


def _partial_fleet(original: Any, app: Any, environ: dict[str, Any], start_response: Any,
                   errors: list[dict[str, Any]], form: dict[str, str]) -> list[bytes]:
    """moto launches from the overrides left; its answer gets the refused overrides' errors."""
    body = urlencode(form).encode()
    environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
    seen: dict[str, Any] = {}

    def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        seen["status"], seen["headers"] = status, headers
        return lambda _data: None

    result = original(app, environ, capture)
    try:
        answer = b"".join(result)
    finally:
        getattr(result, "close", lambda: None)()
    if str(seen.get("status", "")).startswith("200"):
        answer = with_errors(answer, errors)
    headers = [(k, v) for k, v in seen.get("headers") or [] if k.lower() != "content-length"]
    start_response(seen.get("status", "200 OK"), [*headers, ("Content-Length", str(len(answer)))])
    return [answer]


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
        if form is not None and (hold := FAULTS.delay(form["Action"])) > 0:
            time.sleep(hold)  # moto's server is threaded: this call waits, the others go on
        code = FAULTS.decide(form) if form is not None else None
        if code is not None:
            return _respond(start_response, STATUS.get(code, 400), error_body(code), "text/xml")
        refused = FAULTS.refuse_overrides(form) if form is not None and form["Action"] == "CreateFleet" else None
        if refused is not None:
            errors, left = refused
            if not any(k.startswith("LaunchTemplateConfigs.") for k in left):
                return _respond(start_response, 200, no_instance_body(errors), "text/xml")
            return _partial_fleet(original, self, environ, start_response, errors, left)
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


def set_faults(endpoint: str, rules: list[FaultRule], seed: int = 0,
               delay_ms: dict[str, float] | None = None) -> dict[str, Any]:
    """Replace the stand-in's rules (and delays, by action) and zero its counts; with no rules, it only counts
    calls."""
    return _request(endpoint, "PUT", {"rules": [asdict(r) for r in rules], "seed": seed,
                                      "delayMs": dict(delay_ms or {})})


def clear_faults(endpoint: str) -> dict[str, Any]:
    """No rules, no counting: every request passes untouched."""
    return _request(endpoint, "DELETE")


def fault_counts(endpoint: str) -> dict[str, Any]:
    """{"rules": [...], "calls": {action: n}, "injected": {action: n}, "injectedByCode": {code: n}} since the
    rules were set."""
    return _request(endpoint, "GET")
