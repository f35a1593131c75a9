"""The ClusterRole/Role in deploy/ grant exactly what the worker's code calls on the Kubernetes API.

The calls are found by scanning the worker's sources (activities/, client/, runtime/, worker.py) for `kubernetes` client
methods; each method's REST path and HTTP verb come from the client itself, so the mapping to RBAC
resource + verb is exact rather than guessed from method names.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import kubernetes.client
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKER_PACKAGES = ("activities", "client", "gateways", "runtime")
WORKER_SOURCES = [ROOT / "worker.py", *(p for pkg in WORKER_PACKAGES for p in sorted((ROOT / pkg).rglob("*.py")))]
CUSTOM_PLURALS = {"nodepools": "karpenter.sh", "nodeclaims": "karpenter.sh",
                  "ec2nodeclasses": "karpenter.k8s.aws", "disruptionpolicies": "nodeflow.dev",
                  "nodeoverlays": "karpenter.sh", "capacitybuffers": "autoscaling.x-k8s.io"}
HTTP_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, order=True)
class Permission:
    group: str
    resource: str  # "pods" or "pods/eviction"
    verb: str

    def __str__(self) -> str:
        return f"{self.verb} {self.group or 'core'}/{self.resource}"


@cache
def endpoints(method: str) -> tuple[tuple[str, str, str], ...]:
    """(api class, REST path, HTTP method) of every kubernetes client API method with this name."""
    out = []
    for cls_name, cls in vars(kubernetes.client).items():
        fn = getattr(cls, f"{method}_with_http_info", None) if cls_name.endswith("Api") else None
        if fn is None:
            continue
        match = re.search(r"call_api\(\s*'([^']+)',\s*'([A-Z]+)'", inspect.getsource(fn))
        if match:
            out.append((cls_name, match.group(1), match.group(2)))
    return tuple(out)


RECEIVER_HINTS = {"core": "CoreV1Api", "custom": "CustomObjectsApi", "policy": "PolicyV1Api",
                  "storage": "StorageV1Api", "apps": "AppsV1Api", "coordination": "CoordinationV1Api",
                  "events": "EventsV1Api"}


def _receiver(node: ast.Attribute) -> str:
    value = node.value
    name = value.attr if isinstance(value, ast.Attribute) else value.id if isinstance(value, ast.Name) else ""
    return name.strip("_").lower()


def _plurals(call: ast.Call | None, *scopes: ast.AST | None) -> list[str]:
    """Known plurals among the call's string constants; else those of its enclosing loop, function or module
    (`for plural in ("nodepools", "nodeclaims"): custom.list_cluster_custom_object(G, V, plural)`)."""
    for node in (call, *scopes):
        if node is None:
            continue
        consts = [a.value for a in ast.walk(node) if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        found = sorted({c for c in consts if c in CUSTOM_PLURALS})
        if found:
            return found
    return []


def permissions_of(path: str, http: str, call: ast.Call | None, watch: bool,
                   *scopes: ast.AST | None) -> set[Permission]:
    parts = path.strip("/").split("/")
    if parts[0] not in ("api", "apis"):  # a non-resource URL (/version): kube's system:public-info-viewer role
        return set()                      # grants it to every client, so the worker's Role needs nothing for it
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    named = len(rest) > 1
    resources = {rest[0]: group}
    if "{plural}" in path:
        plurals = _plurals(call, *scopes)
        where = ast.unparse(call) if call is not None else path
        assert plurals, f"custom object call without a known plural: {where}"
        resources = {p: CUSTOM_PLURALS[p] for p in plurals}
    if http == "GET":
        verbs = {"get"} if named else {"list"} | ({"watch"} if watch else set())
    elif http == "DELETE":
        verbs = {"delete" if named else "deletecollection"}
    else:
        verbs = {HTTP_VERBS[http]}
    sub = f"/{rest[2]}" if len(rest) > 2 else ""
    return {Permission(g, r + sub, v) for r, g in resources.items() for v in verbs}


def used_permissions() -> tuple[set[Permission], list[str]]:
    """Every permission the worker's code needs, and the call sites found (for failure messages)."""
    needed: set[Permission] = set()
    sites: list[str] = []
    for source in WORKER_SOURCES:
        if not source.exists():
            continue
        tree = ast.parse(source.read_text(), str(source))
        streamed = {id(c.args[0]): c for c in ast.walk(tree) if isinstance(c, ast.Call) and c.args
                    and isinstance(c.func, ast.Attribute) and c.func.attr == "stream"}
        calls = {id(c.func): c for c in ast.walk(tree) if isinstance(c, ast.Call)} | streamed
        scopes = {id(inner): outer for outer in ast.walk(tree) if isinstance(outer, ast.For | ast.FunctionDef
                  | ast.AsyncFunctionDef) for inner in ast.walk(outer)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            found = endpoints(node.attr)
            if not found:
                continue
            hint = RECEIVER_HINTS.get(next((k for k in RECEIVER_HINTS if k in _receiver(node)), ""), "")
            chosen = [e for e in found if e[0] == hint] or (list(found) if len({e[1:] for e in found}) == 1 else [])
            assert chosen, f"{source}:{node.lineno}: cannot tell which API {node.attr} belongs to: {found}"
            call = calls.get(id(node))
            # a list method handed over uncalled is a cache's list call, used for LIST and WATCH (runtime/informer.py)
            handed = call is None and node.attr.startswith("list_")
            watch = id(node) in streamed or handed or (call is not None and any(
                k.arg == "watch" and isinstance(k.value, ast.Constant) and k.value.value for k in call.keywords))
            _, path, http = chosen[0]
            needed |= permissions_of(path, http, call, watch, scopes.get(id(node)), tree)
            sites.append(f"{source.relative_to(ROOT)}:{node.lineno} {node.attr}")
    return needed, sites


@cache
def rendered_manifests() -> list[dict]:
    """The base as kustomize renders it (kubectl's built-in kustomize); the raw files when kubectl is absent."""
    try:
        out = subprocess.run(["kubectl", "kustomize", str(ROOT / "deploy")], check=True, capture_output=True,
                             text=True, timeout=60).stdout
        return [d for d in yaml.safe_load_all(out) if d]
    except FileNotFoundError:
        docs = []
        for f in sorted((ROOT / "deploy").glob("*.yaml")):
            if f.name != "kustomization.yaml":
                docs += [d for d in yaml.safe_load_all(f.read_text()) if d]
        return docs


def granted_permissions(docs: list[dict]) -> set[Permission]:
    granted: set[Permission] = set()
    for doc in docs:
        if doc.get("kind") not in ("ClusterRole", "Role"):
            continue
        for rule in doc.get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    for verb in rule.get("verbs") or []:
                        granted.add(Permission(group, resource, verb))
    return granted


def test_scanner_maps_client_methods_to_rbac() -> None:
    """The scanner itself, on calls whose RBAC meaning is well known."""
    tree = ast.parse("core.create_namespaced_pod_eviction(n, ns, b)\ncustom.patch_cluster_custom_object("
                     "'karpenter.sh', 'v1', 'nodeclaims', name, body)\nw.stream(core.list_node)")
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)]
    _, path, http = next(e for e in endpoints("create_namespaced_pod_eviction") if e[0] == "CoreV1Api")
    assert permissions_of(path, http, calls[0], False) == {Permission("", "pods/eviction", "create")}
    _, path, http = endpoints("patch_cluster_custom_object")[0]
    patch_call = next(c for c in calls if isinstance(c.func, ast.Attribute)
                      and c.func.attr == "patch_cluster_custom_object")
    assert permissions_of(path, http, patch_call, False) == {Permission("karpenter.sh", "nodeclaims", "patch")}
    _, path, http = endpoints("list_node")[0]
    assert permissions_of(path, http, None, True) == {Permission("", "nodes", "list"), Permission("", "nodes", "watch")}


def test_rbac_covers_every_call_and_nothing_more() -> None:
    needed, sites = used_permissions()
    assert len(sites) >= 5, f"the scan found too few Kubernetes calls to be meaningful: {sites}"
    docs = rendered_manifests()
    granted = granted_permissions(docs)
    missing = sorted(needed - granted)
    extra = sorted(granted - needed)
    assert not missing, "code calls the API without RBAC: " + ", ".join(map(str, missing))
    assert not extra, "RBAC grants what no code uses: " + ", ".join(map(str, extra))


def test_rbac_has_no_wildcards_and_is_bound_to_the_worker() -> None:
    docs = rendered_manifests()
    roles = [d for d in docs if d.get("kind") in ("ClusterRole", "Role")]
    assert roles
    for role in roles:
        for rule in role.get("rules") or []:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in (rule.get(field) or []), f"{role['metadata']['name']}: wildcard in {field}"
            assert not rule.get("nonResourceURLs")
    bindings = [d for d in docs if d.get("kind") in ("ClusterRoleBinding", "RoleBinding")]
    bound = {(b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings}
    assert {(r["kind"], r["metadata"]["name"]) for r in roles} <= bound
    deployment = next(d for d in docs if d.get("kind") == "Deployment")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    for b in bindings:
        assert {"kind": "ServiceAccount", "name": account, "namespace": "nodeflow"} in b["subjects"]


if __name__ == "__main__":  # print what the code needs, to write the ClusterRole from
    for p in sorted(used_permissions()[0]):
        print(p)
    pytest.main([__file__])
