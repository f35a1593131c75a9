"""The kustomize base: what the worker Deployment promises, and that it applies to the simulator."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from api.nodepool import NodePool
from devstack.binaries import find_binary
from simulator.server import Simulator

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = find_binary("kubectl")


@cache
def render(path: str = "deploy") -> tuple[dict[str, Any], ...]:
    out = subprocess.run([KUBECTL, "kustomize", str(ROOT / path)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)


def one(docs: tuple[dict[str, Any], ...], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def kubectl(sim: Simulator, *args: str) -> subprocess.CompletedProcess[str]:
    # kubectl validates fields as it would against a real cluster (the simulator serves /openapi/v3).
    return subprocess.run([KUBECTL, "--kubeconfig", sim.kubeconfig_path, *args],
                          capture_output=True, text=True, timeout=60)


def test_worker_deployment_is_hardened_and_probed() -> None:
    docs = render()
    dep = one(docs, "Deployment", "nodeflow-worker")
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}
    args = container["args"]
    port = int(args[args.index("--metrics-port") + 1])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("livenessProbe", "readinessProbe"):
        assert ports[container[probe]["httpGet"]["port"]] == port
    # Every writable path is a volume; the worker never runs on nodes nodeflow may drain.
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp"}
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"} in terms[0]["matchExpressions"]


def test_config_only_sets_variables_the_worker_reads() -> None:
    sources = "".join((ROOT / p).read_text() for p in ("worker.py", "client/connection.py", "runtime/cloud_clients.py"))
    read = set(re.findall(r"""env(?:_flag|\.get)?\(\s*["']([A-Z0-9_]+)["']""", sources))
    config = one(render(), "ConfigMap", "nodeflow-config")
    unknown = sorted(k for k in config["data"] if k not in read)
    assert not unknown, f"ConfigMap sets variables nothing reads: {unknown}"


def test_search_attribute_job_runs_the_registration_script() -> None:
    docs = render()
    job = one(docs, "Job", "nodeflow-search-attributes")
    volume = next(v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "scripts")
    script_cm = one(docs, "ConfigMap", volume["configMap"]["name"])  # kustomize rewrote the hashed name
    script = script_cm["data"]["register-search-attributes.sh"]
    for name in ("NodeflowNode", "NodeflowNodePool", "NodeflowReason", "NodeflowPhase"):
        assert name in script


def test_example_nodepools_are_valid() -> None:
    pools = [d for d in render("deploy/examples") if d["kind"] == "NodePool"]
    assert len(pools) >= 2
    for doc in pools:
        NodePool.model_validate(doc)


def test_base_and_examples_apply_to_the_simulator(sim: Simulator) -> None:
    # A real API server rejects a dry run of namespaced objects whose namespace does not exist yet, so the
    # namespace is applied first, then the whole base is dry-run on the server, then applied.
    ns = kubectl(sim, "apply", "-f", str(ROOT / "deploy" / "namespace.yaml"))
    assert ns.returncode == 0, ns.stderr
    dry = kubectl(sim, "apply", "--dry-run=server", "-k", str(ROOT / "deploy"))
    assert dry.returncode == 0, dry.stderr
    assert "(server dry run)" in dry.stdout
    got = kubectl(sim, "get", "deployments", "-n", "nodeflow", "-o", "name")
    assert got.returncode == 0 and got.stdout.strip() == "", "a dry run must not persist anything"
    real = kubectl(sim, "apply", "-k", str(ROOT / "deploy"))
    assert real.returncode == 0, real.stderr
    examples = kubectl(sim, "apply", "-k", str(ROOT / "deploy" / "examples"))
    assert examples.returncode == 0, examples.stderr
    for kind, expected in (("deployment", "nodeflow-worker"), ("job", "nodeflow-search-attributes"),
                           ("serviceaccount", "nodeflow")):
        out = kubectl(sim, "get", kind, "-n", "nodeflow", "-o", "name").stdout
        assert expected in out, (kind, out)
    rendered = {(d["kind"], d["metadata"]["name"]) for d in render()}
    cluster_scoped = kubectl(sim, "get", "clusterroles,clusterrolebindings,nodepools", "-o", "name").stdout
    for kind, name in rendered:
        if kind in ("ClusterRole", "ClusterRoleBinding"):
            assert f"/{name}" in cluster_scoped
    assert "nodepool.karpenter.sh/general" in cluster_scoped
    crds = kubectl(sim, "get", "customresourcedefinitions", "-o", "name").stdout
    assert "karpenter.sh" in crds and "nodepools" in crds and "nodeclaims" in crds


SIMULATED_WORLD = {"simulator", "devstack"}


def test_dockerfile_matches_the_deployment() -> None:
    """The image runs as the Deployment's user and ships every package pyproject installs."""
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY (\w+) \w+$", dockerfile, re.M))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    product = packages - SIMULATED_WORLD  # the [sim] extra's packages stay out of the image (test_image.py)
    assert product and product <= copied, product - copied
    assert not copied & SIMULATED_WORLD
    user = re.search(r"^USER (\d+):(\d+)$", dockerfile, re.M)
    assert user is not None
    raw = (ROOT / "deploy" / "worker.yaml").read_text()
    deployment = next(d for d in yaml.safe_load_all(raw) if d["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(user.group(1))
    assert deployment["spec"]["template"]["spec"]["containers"][0]["command"] == ["python", "-m", "worker"]


def test_worker_runs_on_system_nodes() -> None:
    """It tolerates the CriticalAddonsOnly taint of dedicated system node groups, and selects Linux nodes."""
    pod = one(render(), "Deployment", "nodeflow-worker")["spec"]["template"]["spec"]
    assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in pod["tolerations"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}


def test_base_has_no_monitoring_crs_and_no_role() -> None:
    """ServiceMonitor and PrometheusRule need the Prometheus Operator's CRDs, so they are opt-in (a component)."""
    docs = render()
    assert not [d for d in docs if d["apiVersion"].startswith("monitoring.coreos.com/")]
    sa = one(docs, "ServiceAccount", "nodeflow")
    assert "eks.amazonaws.com/role-arn" not in (sa["metadata"].get("annotations") or {})


def test_production_overlay_scrapes_alerts_and_assumes_its_role() -> None:
    docs = render("examples/production-overlay")
    service = one(docs, "Service", "nodeflow-worker-metrics")
    monitor = one(docs, "ServiceMonitor", "nodeflow-worker")
    labels = service["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]} and endpoint["path"] == "/metrics"
    rule = one(docs, "PrometheusRule", "nodeflow")
    tested = yaml.safe_load((ROOT / "deploy" / "monitoring" / "nodeflow-rules.yaml").read_text())
    assert rule["spec"]["groups"] == tested["groups"]
    # The alerts select the scrape job by the Service's name, which is the job a ServiceMonitor gives it.
    assert f'up{{job="{service["metadata"]["name"]}"}}' in yaml.safe_dump(rule)
    dashboard = one(docs, "ConfigMap", "nodeflow-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert '"uid": "nodeflow"' in dashboard["data"]["nodeflow-dashboard.json"]
    sa = one(docs, "ServiceAccount", "nodeflow")
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == "arn:aws:iam::123456789012:role/nodeflow"
    pod = one(docs, "Deployment", "nodeflow-worker")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux", "eks.amazonaws.com/nodegroup": "system"}
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "NetworkPolicy"} == {
        "nodeflow-worker", "nodeflow-search-attributes"}


def test_irsa_component_without_a_role_set_keeps_a_placeholder_that_cannot_be_assumed(tmp_path: Path) -> None:
    """Left unset, the role ARN names account 000000000000, which AWS rejects: no silent fallback to node roles."""
    deploy = Path(os.path.relpath(ROOT / "deploy", tmp_path))  # kustomize takes no absolute roots
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": [str(deploy)], "components": [str(deploy / "components" / "irsa")]}))
    out = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    sa = one(tuple(d for d in yaml.safe_load_all(out) if d), "ServiceAccount", "nodeflow")
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::000000000000:")
    assert sa["metadata"]["labels"] == {"app.kubernetes.io/name": "nodeflow"}
