"""The Kubernetes REST API over aiohttp: routing, CRUD verbs, subresources, watch, discovery, /sim endpoints.

Every handler answers a `Status` body on error, with the code a real API server would use; nothing a
client sends may produce a 500 (except injected faults and the multi-PDB eviction answer).
"""

from __future__ import annotations

import asyncio
import base64
import heapq
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from api.yaml_load import kube_load
from simulator import crd_validation, discovery, fieldcheck, openapi, scale
from simulator.errors import ApiError, bad_request, conflict, invalid, not_found
from simulator.faults import Faults
from simulator.patch import deep_copy, json_patch, merge_patch, strategic_merge_patch
from simulator.pods import is_deleting, meta, set_condition
from simulator.resources import BY_KIND, ResourceType, lookup
from simulator.selectors import exact_field, parse_field_selector, parse_label_selector
from simulator.store import Watcher
from simulator.traffic import TRUE, Traffic, verb_of
from simulator.watch_options import bookmark, initial_events
from simulator.world import World

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
NAMESPACES = BY_KIND["Namespace"]
PDBS = BY_KIND["PodDisruptionBudget"]
CRDS = BY_KIND["CustomResourceDefinition"]
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
JSON_CT = "application/json"
DEFAULT_WATCH_TIMEOUT = 1800


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(text=dumps(obj), status=status, content_type=JSON_CT, headers=headers)


def error_response(exc: ApiError) -> web.Response:
    return json_response(exc.status(), status=exc.code, headers=exc.headers or None)


class Route:
    """A parsed resource path."""

    def __init__(self, rt: ResourceType, namespace: str | None, name: str | None, sub: str | None,
                 watch: bool) -> None:
        self.rt, self.namespace, self.name, self.sub, self.watch = rt, namespace, name, sub, watch


def parse_route(path: str) -> Route | None:
    """Map /api/v1/... or /apis/group/version/... to a resource route (None when not a resource path)."""
    segs = [s for s in path.split("/") if s]
    if len(segs) >= 2 and segs[0] == "api":
        group, version, rest = "", segs[1], segs[2:]
    elif len(segs) >= 3 and segs[0] == "apis":
        group, version, rest = segs[1], segs[2], segs[3:]
    else:
        return None
    if not rest:
        return None
    watch = False
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        rt = lookup(group, version, rest[2])
        if rt is not None and rt.namespaced:
            namespace, rest = rest[1], rest[2:]
    if not rest:
        raise not_found("resource", path)
    rt = lookup(group, version, rest[0])
    if rt is None:
        raise ApiError(404, "the server could not find the requested resource", details={"causes": [
            {"reason": "UnexpectedServerResponse", "message": "404 page not found"}]})
    if rt.namespaced and namespace is None and len(rest) > 1:
        raise ApiError(404, "the server could not find the requested resource")
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if len(rest) > 3 or (sub is not None and sub not in rt.subresources):
        raise ApiError(404, "the server could not find the requested resource")
    return Route(rt, namespace, name, sub, watch)


Backlog = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class WatchQuery:
    """What a watch asks for: which objects, from which resourceVersion (0: the current state), for how long."""

    matches: Callable[[dict[str, Any] | None], bool]
    since: int
    timeout: int
    bookmarks: bool
    initial_events: bool | None = None  # sendInitialEvents: the current state, then an initial-events-end BOOKMARK


def _decoded(raw: bytes, content_type: str) -> Any:
    """A request body: YAML when its content type says so, else JSON, as kube-apiserver decodes both (YAML the way
    sigs.k8s.io/yaml converts it to JSON, so a timestamp stays a string); 400 when it does not decode."""
    try:
        return kube_load(raw) if "yaml" in content_type.lower() else json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the body of the request could not be decoded: {exc}") from exc


class ApiServer:
    """Holds the world and builds the aiohttp application."""

    def __init__(self, world: World, faults: Faults | None = None) -> None:
        self.world = world
        self.store = world.store
        self.faults = faults or Faults()
        self.requests = 0
        self.traffic = Traffic()
        self._watchers: set[Watcher] = set()
        self.closing = False

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def close_watches(self) -> None:
        self.closing = True
        self._end_watches()

    async def cut_watches(self) -> int:
        """End every open watch stream now (a clean end of the chunked body); clients resume or relist."""
        cut = self._end_watches()
        self.faults.note_watch_cut(cut)
        return cut

    async def start_outage(self, seconds: float | None) -> None:
        """Every API request answers 503 from now on; the open watches break as they would with the server."""
        self.faults.start_outage(seconds)
        await self.cut_watches()

    def _end_watches(self) -> int:
        watchers = list(self._watchers)
        self._watchers.clear()
        for w in watchers:
            w.loop.call_soon_threadsafe(w.queue.put_nowait, None)
        return len(watchers)

    def stats(self) -> dict[str, Any]:
        """What /sim/stats answers: the world's figures, requests served and every fault injected."""
        stats = self.world.stats()
        stats["requests"] = self.requests
        stats["byVerb"] = self.traffic.stats()
        stats["faultsInjected"] = dict(self.faults.injected)
        stats["faultKnobs"] = self.faults.knob_stats(open_watches=len(self._watchers))
        return stats

    # ---- entry -------------------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Serve one request, counted per verb with its response bytes (/sim requests are not counted there)."""
        self.requests += 1
        if request.path.startswith("/sim/"):
            return await self._serve(request)
        verb = verb_of(request.method, request.path, request.query)
        self.traffic.request(verb)
        resp = await self._serve(request)
        if verb != "watch":  # a watch counts its bytes as it writes them (_write_event)
            self.traffic.sent(verb, resp.content_length or 0)
        return resp

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        try:
            path = request.path
            if path.startswith("/sim/"):
                return await self._sim(request)
            outage = self.faults.outage_error()
            if outage is not None:
                raise outage
            special = self._special(request, path)
            if special is not None:
                return special
            route = parse_route(path)
            if route is None:
                raise ApiError(404, "the server could not find the requested resource")
            fault = self.faults.pick(request.method, route.rt.plural)
            latency = self.faults.config.latency
            if latency > 0:
                await asyncio.sleep(latency)
            if fault is not None:
                raise fault
            return await self._resource(request, route)
        except ApiError as exc:
            return error_response(exc)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a bug here must not look like an API answer the client trusts
            log.exception("simulator handler failed for %s %s", request.method, request.path)
            return error_response(ApiError(500, f"simulator internal error: {type(exc).__name__}: {exc}"))

    def _special(self, request: web.Request, path: str) -> web.Response | None:
        p = path.rstrip("/") or "/"
        if request.method != "GET" and p in ("/api", "/apis", "/version", "/healthz", "/livez", "/readyz"):
            raise ApiError(405, f"the server does not allow this method on the requested resource: {request.method}")
        if p == "/version":
            return json_response(discovery.VERSION_INFO)
        if p in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if p == "/api":
            return json_response(discovery.api_versions(request.host))
        if p == "/apis":
            return json_response(discovery.api_group_list())
        segs = [s for s in p.split("/") if s]
        if len(segs) == 2 and segs[0] == "api":
            doc = discovery.resource_list("", segs[1])
            if doc is None:
                raise ApiError(404, "the server could not find the requested resource")
            return json_response(doc)
        if len(segs) == 2 and segs[0] == "apis":
            group_doc = discovery.api_group(segs[1])
            if group_doc is None:
                raise ApiError(404, "the server could not find the requested resource")
            return json_response(group_doc)
        if len(segs) == 3 and segs[0] == "apis":
            doc = discovery.resource_list(segs[1], segs[2])
            if doc is None:
                raise ApiError(404, "the server could not find the requested resource")
            return json_response(doc)
        if p.startswith("/openapi/v3"):
            return self._openapi(p)
        if p == "/" or p.startswith("/openapi"):
            raise ApiError(404, "the server could not find the requested resource")
        return None

    @staticmethod
    def _openapi(p: str) -> web.Response:
        """/openapi/v3 (the index of group/versions) and /openapi/v3/api/v1, /openapi/v3/apis/<group>/<v>."""
        if p == "/openapi/v3":
            return json_response(openapi.root_document())
        segs = p.split("/")[3:]
        body = None
        if len(segs) == 2 and segs[0] == "api":
            body = openapi.gv_body("", segs[1])
        elif len(segs) == 3 and segs[0] == "apis":
            body = openapi.gv_body(segs[1], segs[2])
        if body is None:
            raise ApiError(404, "the server could not find the requested resource")
        return web.Response(text=body[0], content_type=JSON_CT, headers={"Etag": f'"{body[1]}"'})

    # ---- /sim endpoints ----------------------------------------------------------------------------------
    async def _sim(self, request: web.Request) -> web.Response:
        p = request.path.rstrip("/")
        if p == "/sim/stats" and request.method == "GET":
            return json_response(self.stats())
        if p in ("/sim/outage", "/sim/watches/cut", "/sim/watches/gone"):
            return await self._sim_chaos(request, p)
        if p == "/sim/ledger" and request.method == "GET":
            return json_response({"removals": self.world.ledger.entries(), **self.world.ledger.summary()})
        if p == "/sim/faults" and request.method in ("POST", "PUT"):
            body = await self._body(request)
            try:
                self.faults.set(rate=float(body.get("rate", 0.0)), codes=tuple(body.get("codes", (429, 500, 409))),
                                latency=float(body.get("latency", 0.0)), methods=body.get("methods"),
                                resources=body.get("resources"))
            except (TypeError, ValueError) as exc:
                raise ApiError(422, f"invalid fault settings: {exc}") from exc
            return json_response({"rate": self.faults.config.rate})
        if p.startswith("/sim/nodes/") and request.method == "POST":
            # POST /sim/nodes/<name>/ready|notready
            parts = p.split("/")
            if len(parts) == 5 and parts[4] in ("ready", "notready"):
                self.world.set_node_ready(parts[3], parts[4] == "ready")
                return json_response({"node": parts[3], "ready": parts[4] == "ready"})
        if p == "/sim/never-ready" and request.method == "POST":
            body = await self._body(request)
            self.world.mark_never_ready(str(body.get("instanceType", "")))
            return json_response({"neverReady": sorted(self.world.never_ready_types)})
        raise ApiError(404, "the server could not find the requested resource")

    async def _sim_chaos(self, request: web.Request, p: str) -> web.Response:
        """POST|DELETE /sim/outage {"seconds": N} (none: until DELETE), POST /sim/watches/cut,
        POST /sim/watches/gone {"count": N} (the next N watch resumes answer 410 Gone)."""
        m = request.method
        try:
            if p == "/sim/outage" and m == "POST":
                seconds = (await self._body(request)).get("seconds")
                await self.start_outage(None if seconds is None else float(seconds))
                return json_response({"outage": True, "seconds": seconds})
            if p == "/sim/outage" and m == "DELETE":
                self.faults.end_outage()
                return json_response({"outage": False})
            if p == "/sim/watches/cut" and m == "POST":
                return json_response({"cut": await self.cut_watches()})
            if p == "/sim/watches/gone" and m == "POST":
                count = (await self._body(request)).get("count", 1)
                return json_response({"goneArmed": self.faults.arm_gone(int(count))})
        except (AttributeError, TypeError, ValueError) as exc:
            raise ApiError(422, f"invalid fault settings: {exc}") from exc
        raise ApiError(405, f"the server does not allow this method on the requested resource: {m}")

    # ---- bodies and options ------------------------------------------------------------------------------
    async def _body(self, request: web.Request) -> Any:
        """A request's body, decoded (`_decoded`); an empty one is an empty object."""
        raw = await request.read()
        return _decoded(raw, request.content_type or "") if raw.strip() else {}

    @staticmethod
    def _int_query(request: web.Request, name: str) -> int | None:
        value = request.query.get(name)
        if value is None or value == "":
            return None
        try:
            return int(value)
        except ValueError as exc:
            raise bad_request(f"invalid value for {name}: {value!r}") from exc

    # ---- resources ---------------------------------------------------------------------------------------
    async def _resource(self, request: web.Request, route: Route) -> web.StreamResponse:
        warnings = await self._check_fields(request, route)
        resp = await self._resource_verb(request, route)
        for w in warnings:
            resp.headers.add("Warning", '299 - "{}"'.format(w.replace("\\", "\\\\").replace('"', '\\"')))
        return resp

    async def _check_fields(self, request: web.Request, route: Route) -> list[str]:
        """`fieldValidation=Strict` rejects a write with unknown or wrongly shaped fields; `Warn` names them."""
        mode = request.query.get("fieldValidation")
        ctype = (request.content_type or "").lower()
        if mode not in ("Strict", "Warn") or request.method not in ("POST", "PUT", "PATCH") \
                or route.sub not in (None, "status") or ctype == "application/json-patch+json":
            return []
        body = await self._body(request)
        found = fieldcheck.check(route.rt, body)
        if found and mode == "Strict":
            kind = route.rt.kind
            raise bad_request(f'{kind} in version "{route.rt.version}" cannot be handled as a {kind}: '
                              f'strict decoding error: {", ".join(found)}')
        return found

    async def _resource_verb(self, request: web.Request, route: Route) -> web.StreamResponse:
        m = request.method
        if route.name is None:
            if m == "GET":
                watch = route.watch or request.query.get("watch") in TRUE
                if watch:
                    return await self._watch(request, route)
                return self._list(request, route)
            if route.watch:
                raise ApiError(405, f"the server does not allow this method on the requested resource: {m}")
            if m == "POST":
                return self._create(route, await self._body(request), request)
            if m == "DELETE":
                return self._delete_collection(request, route)
        elif route.watch:
            if m == "GET":
                return await self._watch(request, route, field_name=route.name)
        elif route.sub is None:
            if m == "GET":
                return self._get(route, request)
            if m == "PUT":
                return self._update(route, await self._body(request), request)
            if m == "PATCH":
                return self._patch(request, route, await request.read())
            if m == "DELETE":
                return self._delete(request, route, await self._body(request))
        elif route.sub == "status":
            if m == "GET":
                return self._get(route)
            if m == "PUT":
                return self._update(route, await self._body(request), request, status_only=True)
            if m == "PATCH":
                return self._patch(request, route, await request.read(), status_only=True)
        elif route.sub == "eviction" and m == "POST":
            body = await self._body(request)
            if not isinstance(body, dict):
                raise bad_request("Eviction body must be an object")
            return json_response(self.world.evict(route.namespace or "", route.name, body), status=201)
        elif route.sub == "binding" and m == "POST":
            return self._bind(route, await self._body(request))
        elif route.sub == "scale" and m in ("GET", "PUT", "PATCH"):
            return await self._scale(request, route)
        raise ApiError(405, f"the server does not allow this method on the requested resource: {m}")

    def _namespace_must_exist(self, rt: ResourceType, namespace: str | None) -> None:
        if rt.namespaced and namespace and self.store.get(NAMESPACES, "", namespace) is None:
            raise not_found("namespaces", namespace)

    def _get(self, route: Route, request: web.Request | None = None) -> web.Response:
        with self.store.lock:
            if route.rt is PDBS:
                self.world.refresh_pdbs()
            obj = self.store.must_get(route.rt, route.namespace or "", route.name or "")
        if request is not None and "as=Table" in request.headers.get("Accept", ""):
            return json_response(discovery.to_table(route.rt, [obj], {"resourceVersion": meta(obj)["resourceVersion"]}))
        return json_response(obj)

    def _select(self, request: web.Request, route: Route) -> tuple[list[dict[str, Any]], int]:
        label_pred = parse_label_selector(request.query.get("labelSelector"))
        fsel = request.query.get("fieldSelector")
        field_pred = parse_field_selector(fsel)
        node = exact_field(fsel, "spec.nodeName") if route.rt is PODS else None
        with self.store.lock:
            if route.rt is PDBS:
                self.world.refresh_pdbs()
            if node is not None:
                objs = self.store.pods_on_node(node) if node else [
                    p for p in self.store.list(PODS, route.namespace) if not (p.get("spec") or {}).get("nodeName")]
                if route.namespace:
                    objs = [o for o in objs if meta(o).get("namespace") == route.namespace]
            else:
                objs = list(self.store.list(route.rt, route.namespace))
            rv = self.store.rv
        if label_pred is not None:
            objs = [o for o in objs if label_pred(meta(o).get("labels") or {})]
        if field_pred is not None:
            objs = [o for o in objs if field_pred(o)]
        return objs, rv

    def _list(self, request: web.Request, route: Route) -> web.Response:
        objs, rv = self._select(request, route)
        list_meta: dict[str, Any] = {"resourceVersion": str(rv)}
        limit = self._int_query(request, "limit")
        token = request.query.get("continue")

        def key(o: dict[str, Any]) -> tuple[str, str]:
            m = o["metadata"]
            return (m.get("namespace") or "", m.get("name") or "")

        if not (limit or token):
            objs = sorted(objs, key=key)  # kube-apiserver lists in key order (namespace, name), paged or not
        else:
            if token:
                try:
                    after = json.loads(base64.urlsafe_b64decode(token.encode()).decode())
                    start = (str(after[0]), str(after[1]))
                except (ValueError, TypeError, IndexError) as exc:
                    raise bad_request("continue key is not valid") from exc
                objs = [o for o in objs if key(o) > start]
            total = len(objs)
            if limit and limit > 0 and total > limit:
                objs = heapq.nsmallest(limit, objs, key=key)  # one page without sorting the whole list
                last = objs[-1]
                list_meta["continue"] = base64.urlsafe_b64encode(dumps(list(key(last))).encode()).decode()
                list_meta["remainingItemCount"] = total - limit
            else:
                objs.sort(key=key)
        if "as=Table" in request.headers.get("Accept", ""):
            return json_response(discovery.to_table(route.rt, objs, list_meta))
        return json_response({"kind": f"{route.rt.kind}List", "apiVersion": route.rt.api_version,
                              "metadata": list_meta, "items": objs})

    # ---- create / update / patch -------------------------------------------------------------------------
    def _validate_meta(self, route: Route, body: Any, creating: bool) -> dict[str, Any]:
        rt = route.rt
        if not isinstance(body, dict):
            raise bad_request("the body must be a JSON object")
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind and kind != rt.kind:
            raise bad_request(f"the kind {kind!r} of the object does not match the resource {rt.plural!r}")
        if api_version and api_version != rt.api_version:
            raise bad_request(f"the API version {api_version!r} in the data does not match the expected API "
                              f"version {rt.api_version!r}")
        m = body.get("metadata")
        if m is None:
            m = body["metadata"] = {}
        if not isinstance(m, dict):
            raise bad_request("metadata must be an object")
        ns = m.get("namespace")
        if rt.namespaced:
            if ns and route.namespace and ns != route.namespace:
                raise bad_request("the namespace of the provided object does not match the namespace sent on the "
                                  "request")
            m["namespace"] = route.namespace or ns or "default"
        name = m.get("name")
        if creating and not name and m.get("generateName"):
            name = m["name"] = f"{m['generateName']}{self.world.controllers.rng.randrange(36**5):05x}"[:253]
        if not name:
            raise invalid(rt.kind, "", "metadata.name: Required value: name or generateName is required", rt.group)
        if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 253:
            raise invalid(rt.kind, str(name), f"metadata.name: Invalid value: {name!r}: a lowercase RFC 1123 "
                                              "subdomain must consist of lower case alphanumeric characters, '-' "
                                              "or '.'", rt.group)
        if route.name and name != route.name:
            raise bad_request("the name of the object does not match the name on the URL")
        for field in ("labels", "annotations"):
            value = m.get(field)
            if value is not None and not (isinstance(value, dict) and all(
                    isinstance(v, str) for v in value.values())):
                raise invalid(rt.kind, name, f"metadata.{field}: Invalid value: must be a map of strings", rt.group)
        if m.get("finalizers") is not None and not (
                isinstance(m["finalizers"], list) and all(isinstance(f, str) for f in m["finalizers"])):
            raise invalid(rt.kind, name, "metadata.finalizers: Invalid value: must be a list of strings", rt.group)
        for field in ("spec", "status"):
            if field in body and body[field] is not None and not isinstance(body[field], dict):
                raise invalid(rt.kind, name, f"{field}: Invalid value: must be an object", rt.group)
        return body

    @staticmethod
    def _admit(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """What the real server checks past metadata: a custom resource against its CRD's schema and rules
        (pruned and defaulted in place), a CRD's rules for compilation and cost (simulator/crd_validation.py)."""
        if rt.custom:
            crd_validation.admit(rt, obj, old)
        elif rt is CRDS:
            crd_validation.check_crd(obj)

    def _create(self, route: Route, body: Any, request: web.Request) -> web.Response:
        rt = route.rt
        obj = self._validate_meta(route, body, creating=True)
        obj = deep_copy(obj)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        m = obj["metadata"]
        for field in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation"):
            m.pop(field, None)
        if rt is PODS:
            spec = obj.setdefault("spec", {})
            if not spec.get("containers"):
                raise invalid("Pod", m["name"], "spec.containers: Required value", "")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("restartPolicy", "Always")
            obj["status"] = {"phase": "Pending"}
        elif rt.custom:
            obj.pop("status", None)
        self._admit(rt, obj, None)
        if rt is NAMESPACES:
            obj.setdefault("status", {"phase": "Active"})
        with self.store.lock:
            self._namespace_must_exist(rt, m.get("namespace"))
            if request.query.get("dryRun"):
                if self.store.get(rt, m.get("namespace") or "", m["name"]) is not None:
                    raise ApiError(409, f'{rt.plural} "{m["name"]}" already exists', reason="AlreadyExists")
                return json_response(obj, status=201)
            created = self.store.create(rt, obj)
        return json_response(created, status=201)

    def _finish_write(self, route: Route, old: dict[str, Any], new: dict[str, Any], status_only: bool,
                      request: web.Request) -> web.Response:
        """Common tail of PUT and PATCH: identity and preconditions, the written part, admission, generation."""
        rt = route.rt
        self._check_identity(route, old, new)
        result = self._status_write(old, new) if status_only else self._object_write(rt, old, new)
        om = old["metadata"]
        self._admit(rt, result, old)
        if not status_only and "generation" in om and \
                result.get("spec") != crd_validation.as_read(rt, old).get("spec"):
            result["metadata"]["generation"] = int(om["generation"]) + 1
        self._validate_meta(Route(rt, route.namespace, route.name, None, False), result, creating=False)
        result["metadata"]["resourceVersion"] = om.get("resourceVersion")
        if request.query.get("dryRun"):
            return json_response(result)
        if result == old:
            return json_response(old)
        stored = self.store.replace(rt, result)
        if self.world.finalize_if_done(rt, stored):
            gone = self.store.rv
            stored = dict(stored, metadata=dict(stored["metadata"], resourceVersion=str(gone)))
        return json_response(stored)

    @staticmethod
    def _check_identity(route: Route, old: dict[str, Any], new: dict[str, Any]) -> None:
        """The body names the object on the URL (name, namespace, uid) at its current resourceVersion, if given."""
        rt = route.rt
        if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
            raise invalid(rt.kind, route.name or "", "metadata: Required value", rt.group)
        om, nm = old["metadata"], new["metadata"]
        if nm.get("name") != om["name"] or (rt.namespaced and nm.get("namespace", om.get("namespace"))
                                            != om.get("namespace")):
            raise bad_request("the name of the object does not match the name on the URL")
        if nm.get("uid") and nm["uid"] != om.get("uid"):
            raise conflict(rt.plural, om["name"], rt.group)
        rv = nm.get("resourceVersion")
        if rv and rv != om.get("resourceVersion"):
            raise conflict(rt.plural, om["name"], rt.group)

    @staticmethod
    def _status_write(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """Through the status subresource only status changes."""
        result = deep_copy(old)
        if "status" in new:
            result["status"] = new.get("status")
        else:
            result.pop("status", None)
        return result

    @staticmethod
    def _object_write(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """A main-resource write: status (where it is a subresource) and server-owned metadata kept; no new
        finalizer on a deleting object; a bound pod's node never changes."""
        om, result = old["metadata"], new
        result["apiVersion"], result["kind"] = rt.api_version, rt.kind
        if rt.has_status:
            if "status" in old:
                result["status"] = deep_copy(old["status"])
            else:
                result.pop("status", None)
        rm = result["metadata"]
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "generation", "namespace"):
            if field in om:
                rm[field] = om[field]
            else:
                rm.pop(field, None)
        if om.get("deletionTimestamp"):
            added = set(rm.get("finalizers") or []) - set(om.get("finalizers") or [])
            if added:
                found = "[]string{" + ", ".join(f'"{f}"' for f in sorted(added)) + "}"
                raise invalid(rt.kind, om["name"], "metadata.finalizers: Forbidden: no new finalizers can be "
                                                   f"added if the object is being deleted, found new finalizers "
                                                   f"{found}", rt.group)
        if rt is PODS:
            old_node = (old.get("spec") or {}).get("nodeName")
            if old_node and (result.get("spec") or {}).get("nodeName") != old_node:
                raise invalid("Pod", om["name"], "spec: Forbidden: pod updates may not change fields other "
                                                 "than spec.containers[*].image, spec.tolerations, ...")
        return result

    def _update(self, route: Route, body: Any, request: web.Request, status_only: bool = False) -> web.Response:
        rt = route.rt
        body = self._validate_meta(route, body, creating=False)
        with self.store.lock:
            old = self.store.must_get(rt, route.namespace or "", route.name or "")
            if rt.custom and not (body.get("metadata") or {}).get("resourceVersion"):
                raise invalid(rt.kind, route.name or "", "metadata.resourceVersion: Invalid value: 0x0: must be "
                                                         "specified for an update", rt.group)
            return self._finish_write(route, old, deep_copy(body), status_only, request)

    def _patch(self, request: web.Request, route: Route, raw: bytes, status_only: bool = False) -> web.Response:
        rt = route.rt
        ctype = (request.content_type or "").lower()
        patch = _decoded(raw, ctype) if raw.strip() else ({} if "yaml" in ctype else None)
        if patch is None:
            raise bad_request("the body of the request was empty")
        with self.store.lock:
            if ctype == "application/apply-patch+yaml" and not status_only and \
                    self.store.get(rt, route.namespace or "", route.name or "") is None:
                return self._create(route, patch, request)  # server-side apply creates what is missing
            old = self.store.must_get(rt, route.namespace or "", route.name or "")
            if ctype == "application/json-patch+json":
                new = json_patch(old, patch)
            elif ctype == "application/merge-patch+json" or ctype == "application/apply-patch+yaml":
                if not isinstance(patch, dict):
                    raise bad_request("a merge patch must be a JSON object")
                new = merge_patch(deep_copy(old), patch)
            elif ctype == "application/strategic-merge-patch+json":
                if rt.custom:
                    raise ApiError(415, "the body of the request was in an unknown format - accepted media types "
                                        "include: application/json-patch+json, application/merge-patch+json, "
                                        "application/apply-patch+yaml")
                new = strategic_merge_patch(deep_copy(old), patch)
            else:
                raise ApiError(415, f"the body of the request was in an unknown format - accepted media types "
                                    f"include: application/json-patch+json, application/merge-patch+json, "
                                    f"application/apply-patch+yaml, application/strategic-merge-patch+json "
                                    f"(got {ctype!r})")
            if not isinstance(new, dict):
                raise invalid(rt.kind, route.name or "", "the patched object is not an object", rt.group)
            patched_rv = (new.get("metadata") or {}).get("resourceVersion")
            if isinstance(new.get("metadata"), dict) and patched_rv == old["metadata"].get("resourceVersion"):
                new["metadata"].pop("resourceVersion", None)
            return self._finish_write(route, old, new, status_only, request)

    # ---- delete ------------------------------------------------------------------------------------------
    def _delete_options(self, request: web.Request, body: Any) -> tuple[int | None, str | None, dict | None]:
        if not isinstance(body, dict):
            raise bad_request("DeleteOptions must be an object")
        grace = body.get("gracePeriodSeconds")
        q_grace = self._int_query(request, "gracePeriodSeconds")
        if q_grace is not None:
            grace = q_grace
        if grace is not None and not isinstance(grace, int):
            raise bad_request("gracePeriodSeconds must be an integer")
        propagation = request.query.get("propagationPolicy") or body.get("propagationPolicy")
        if propagation not in (None, "Orphan", "Background", "Foreground"):
            raise bad_request(f"propagationPolicy: Unsupported value: {propagation!r}")
        if body.get("orphanDependents") is True:
            propagation = "Orphan"
        return grace, propagation, body.get("preconditions")

    def _delete(self, request: web.Request, route: Route, body: Any) -> web.Response:
        grace, propagation, pre = self._delete_options(request, body)
        if request.query.get("dryRun") or (isinstance(body, dict) and body.get("dryRun")):
            return json_response(self.store.must_get(route.rt, route.namespace or "", route.name or ""))
        obj, gone = self.world.delete(route.rt, route.namespace or "", route.name or "", grace, propagation, pre)
        # apiserver handlers/delete.go: 202 only for a deletion still pending that asked orphanDependents=false
        pending_cascade = not gone and isinstance(body, dict) and body.get("orphanDependents") is False
        return json_response(obj, status=202 if pending_cascade else 200)

    def _delete_collection(self, request: web.Request, route: Route) -> web.Response:
        grace, propagation, _ = self._delete_options(request, {})
        objs, _ = self._select(request, route)
        out = []
        for obj in objs:
            try:
                res, _ = self.world.delete(route.rt, meta(obj).get("namespace") or "", meta(obj)["name"], grace,
                                           propagation)
                out.append(res)
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return json_response({"kind": f"{route.rt.kind}List", "apiVersion": route.rt.api_version,
                              "metadata": {"resourceVersion": str(self.store.rv)}, "items": out})

    # ---- subresources ------------------------------------------------------------------------------------
    def _bind(self, route: Route, body: Any) -> web.Response:
        if not isinstance(body, dict) or not isinstance(body.get("target"), dict) or not body["target"].get("name"):
            raise invalid("Binding", route.name or "", "target.name: Required value")
        node = body["target"]["name"]
        with self.store.lock:
            pod = self.store.must_get(PODS, route.namespace or "", route.name or "")
            current = (pod.get("spec") or {}).get("nodeName")
            if current:
                raise ApiError(409, f'Operation cannot be fulfilled on pods/binding "{route.name}": pod '
                                    f'{route.name} is already assigned to node "{current}"')
            if is_deleting(pod):
                raise ApiError(409, f'Operation cannot be fulfilled on pods/binding "{route.name}": pod '
                                    f"{route.name} is being deleted, cannot be assigned to a host")
            new = deep_copy(pod)
            new.setdefault("spec", {})["nodeName"] = node
            set_condition(new, "PodScheduled", "True")
            self.store.replace(PODS, new)
        return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                              "code": 201}, status=201)

    async def _scale(self, request: web.Request, route: Route) -> web.Response:
        """GET, PUT or PATCH the Scale of a Deployment, ReplicaSet or StatefulSet."""
        body = None if request.method == "GET" else await self._body(request)
        ctype = None if request.method != "PATCH" else (request.content_type or "").lower()
        with self.store.lock:
            obj = self.store.must_get(route.rt, route.namespace or "", route.name or "")
            if body is not None:
                new = scale.scaled(route.rt, obj, ctype, body)
                if new != obj:
                    obj = new if request.query.get("dryRun") else self.store.replace(route.rt, new)
        return json_response(scale.to_scale(obj))

    # ---- watch -------------------------------------------------------------------------------------------
    async def _watch(self, request: web.Request, route: Route, field_name: str | None = None) -> web.StreamResponse:
        """A watch: the backlog (current objects, or the history after resourceVersion), then live events."""
        query = self._watch_query(request, route, field_name)
        watcher = Watcher(route.rt, asyncio.get_running_loop())
        backlog, current_rv = self._watch_open(route, query, watcher)
        resp = web.StreamResponse(status=200, headers={"Content-Type": JSON_CT, "Transfer-Encoding": "chunked"})
        await resp.prepare(request)
        try:
            if backlog is None:
                status = ApiError(410, f"too old resource version: {query.since} ({self.store.compacted_rv})",
                                  reason="Expired").status()
                await self._write_event(resp, "ERROR", status)
                return resp
            for kind, obj in backlog:
                await self._write_event(resp, kind, obj)
            if query.initial_events:
                await self._write_event(resp, "BOOKMARK", bookmark(route.rt, current_rv, initial_events_end=True))
            await self._watch_follow(resp, watcher, route.rt, query, current_rv)
        except (ConnectionResetError, RuntimeError):
            pass
        finally:
            self.store.remove_watcher(watcher)
            self._watchers.discard(watcher)
        return resp

    def _watch_query(self, request: web.Request, route: Route, field_name: str | None) -> WatchQuery:
        """Parse the watch parameters (a 400 before any byte of the stream is sent)."""
        label_pred = parse_label_selector(request.query.get("labelSelector"))
        fsel = request.query.get("fieldSelector")
        if field_name:
            fsel = f"metadata.name={field_name}" + (f",{fsel}" if fsel else "")
        field_pred = parse_field_selector(fsel)
        timeout = self._int_query(request, "timeoutSeconds") or DEFAULT_WATCH_TIMEOUT
        rv_text = request.query.get("resourceVersion") or ""
        try:
            since = int(rv_text) if rv_text else 0
        except ValueError as exc:
            raise bad_request(f"invalid resource version {rv_text!r}") from exc
        bookmarks = request.query.get("allowWatchBookmarks") in TRUE
        initial = initial_events(request, bookmarks, route.rt)

        def matches(obj: dict[str, Any] | None) -> bool:
            if obj is None:
                return False
            if route.namespace and meta(obj).get("namespace") != route.namespace:
                return False
            if label_pred is not None and not label_pred(meta(obj).get("labels") or {}):
                return False
            return field_pred is None or field_pred(obj)

        return WatchQuery(matches=matches, since=since, timeout=timeout, bookmarks=bookmarks, initial_events=initial)

    def _watch_open(self, route: Route, query: WatchQuery, watcher: Watcher) -> tuple[Backlog | None, int]:
        """Under the store lock, so no event falls between: the backlog (None when the history is gone, or an
        armed Gone fault answers this resume) and the resourceVersion it reaches; the watcher is registered
        unless the backlog is gone."""
        rt = route.rt
        with self.store.lock:
            if query.initial_events or (query.since == 0 and query.initial_events is None):
                backlog: Backlog | None = [("ADDED", o) for o in self.store.list(rt, route.namespace)
                                           if query.matches(o)]
            elif query.since == 0:
                backlog = []  # sendInitialEvents=false without a version: from now on
            else:
                events = None if self.faults.take_gone() else self.store.events_since(rt, query.since)
                backlog = None if events is None else [x for e in events if (x := _translate(e, query.matches))]
            if backlog is not None:
                self.store.add_watcher(watcher)
                self._watchers.add(watcher)
            return backlog, self.store.rv

    async def _watch_follow(self, resp: web.StreamResponse, watcher: Watcher, rt: ResourceType, query: WatchQuery,
                            current_rv: int) -> None:
        """Live events after `current_rv` until the timeout, a close, or the server shutting down; with
        bookmarks, a BOOKMARK after every 5 quiet seconds."""
        deadline = time.monotonic() + query.timeout
        last_rv = current_rv
        while not self.closing:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                ev = await asyncio.wait_for(watcher.queue.get(),
                                            timeout=min(remaining, 5.0 if query.bookmarks else remaining))
            except TimeoutError:
                if query.bookmarks:
                    await self._write_event(resp, "BOOKMARK", bookmark(rt, max(last_rv, self.store.rv)))
                continue
            # everything queued meanwhile goes out in one write: a wakeup per event left a watcher of 1,000 new
            # NodeClaims tens of seconds behind while the world's ticks shared the loop (docs/benchmarks.md)
            batch = [ev]
            while batch[-1] is not None and not watcher.queue.empty():
                batch.append(watcher.queue.get_nowait())
            lines = []
            for ev in batch:
                if ev is None:
                    break
                last_rv = ev.rv
                if ev.rv > current_rv and (out := _translate(ev, query.matches)):
                    lines.append(_event_line(*out))
            if lines:
                await self._write(resp, b"".join(lines))
            if batch[-1] is None:
                break

    async def _write_event(self, resp: web.StreamResponse, kind: str, obj: dict[str, Any]) -> None:
        await self._write(resp, _event_line(kind, obj))

    async def _write(self, resp: web.StreamResponse, data: bytes) -> None:
        self.traffic.sent("watch", len(data))
        await resp.write(data)


def _event_line(kind: str, obj: dict[str, Any]) -> bytes:
    return (dumps({"type": kind, "object": obj}) + "\n").encode()


def _translate(ev: Any, matches: Any) -> tuple[str, dict[str, Any]] | None:
    """A store event as the watcher sees it through its selectors (objects leaving a selector are DELETED)."""
    if ev.type == "ADDED":
        return ("ADDED", ev.obj) if matches(ev.obj) else None
    if ev.type == "DELETED":
        return ("DELETED", ev.obj) if matches(ev.old) else None
    was, now = matches(ev.old), matches(ev.obj)
    if was and now:
        return ("MODIFIED", ev.obj)
    if now:
        return ("ADDED", ev.obj)
    if was:
        return ("DELETED", ev.obj)
    return None

