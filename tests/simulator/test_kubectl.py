"""kubectl against the simulator: get, delete (Terminating under a finalizer), drain blocked by a PDB, apply
with kubectl's own field validation (no `--validate=false`), explain, and Deployments it gets and scales."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.sim_objects import node, pdb, replicaset, wait_for

from devstack.binaries import find_binary
from simulator.server import Simulator

KUBECTL = find_binary("kubectl")
WEB = {"app": "web"}
ROOT = Path(__file__).resolve().parents[2]
# The examples that are object manifests (the plan-*.yaml snapshots carry uids and status for `nodeflow plan`).
MANIFESTS = ("examples/ec2nodeclass.yaml", "examples/nodepool-aks-nap.yaml",
             "examples/nodepool-maintenance-window.yaml", "examples/seed-budgets.yaml")
BAD_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: typo}
spec:
  replicas: 1
  selector: {matchLabels: {app: typo}}
  template:
    metadata: {labels: {app: typo}}
    spec:
      containers: [{name: app, image: app:1, imagePullPolicyy: Always}]
"""
BAD_NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: typo}
spec:
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfterr: 30s}
  template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}, requirements: []}}
"""


def kubectl(sim: Simulator, *args: str, timeout: float = 60, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL or "kubectl", "--kubeconfig", sim.kubeconfig_path, *args], capture_output=True,
                          text=True, timeout=timeout, input=stdin)


@pytest.fixture
def cluster(sim: Simulator) -> Simulator:
    sim.load_objects([node("n1", finalizers=["karpenter.sh/termination"]), node("n2"),
                      replicaset("web", 2, WEB, nodeSelector={"kubernetes.io/hostname": "n1"}),
                      pdb("web", WEB, maxUnavailable=0)])
    wait_for(lambda: sim.stats()["pods"]["running"] == 2, what="pods running")
    return sim


def test_get_nodes_and_pods_across_namespaces(cluster: Simulator) -> None:
    out = kubectl(cluster, "get", "nodes,pods", "-A")
    assert out.returncode == 0, out.stderr
    assert "node/n1" in out.stdout and "Ready" in out.stdout
    assert out.stdout.count("pod/web-") == 2 and "Running" in out.stdout
    wide = kubectl(cluster, "get", "pods", "-o", "wide")
    assert wide.returncode == 0 and "n1" in wide.stdout
    as_json = kubectl(cluster, "get", "pdb", "web", "-o", "jsonpath={.status.disruptionsAllowed}")
    assert as_json.returncode == 0 and as_json.stdout == "0"


def test_delete_node_stays_terminating_while_finalized(cluster: Simulator) -> None:
    out = kubectl(cluster, "delete", "node", "n1", "--wait=false")
    assert out.returncode == 0, out.stderr
    ts = kubectl(cluster, "get", "node", "n1", "-o", "jsonpath={.metadata.deletionTimestamp}")
    assert ts.returncode == 0 and ts.stdout.strip(), "still there, with a deletionTimestamp"
    patched = kubectl(cluster, "patch", "node", "n1", "--type=json", "-p",
                      '[{"op":"remove","path":"/metadata/finalizers"}]')
    assert patched.returncode == 0, patched.stderr
    gone = kubectl(cluster, "get", "node", "n1")
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_drain_fails_with_the_pdb_message(cluster: Simulator) -> None:
    out = kubectl(cluster, "drain", "--timeout=4s", "--ignore-daemonsets", "n1")
    assert out.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in out.stdout + out.stderr
    cordoned = kubectl(cluster, "get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}")
    assert cordoned.stdout == "true"
    assert cluster.stats()["evictions"].get("429", 0) >= 2


def test_apply_examples_with_kubectl_validation(sim: Simulator) -> None:
    files = [a for f in MANIFESTS for a in ("-f", str(ROOT / f))]
    out = kubectl(sim, "apply", *files)
    assert out.returncode == 0, out.stderr
    snapshot = kubectl(sim, "apply", "-f", str(ROOT / "examples" / "plan-drift.yaml"))
    assert snapshot.returncode == 0, snapshot.stderr
    pools = kubectl(sim, "apply", "-k", str(ROOT / "deploy" / "examples"))
    assert pools.returncode == 0, pools.stderr
    again = kubectl(sim, "apply", *files)
    assert again.returncode == 0 and "unchanged" in again.stdout, again.stderr


def test_kubectl_rejects_an_unknown_field(sim: Simulator) -> None:
    for manifest, field in ((BAD_DEPLOYMENT, "spec.template.spec.containers[0].imagePullPolicyy"),
                            (BAD_NODEPOOL, "spec.disruption.consolidateAfterr")):
        out = kubectl(sim, "apply", "-f", "-", stdin=manifest)
        assert out.returncode != 0
        assert f'strict decoding error: unknown field "{field}"' in out.stderr
    assert kubectl(sim, "get", "deploy,nodepools", "-o", "name").stdout == ""
    warned = kubectl(sim, "apply", "--validate=warn", "-f", "-", stdin=BAD_DEPLOYMENT)
    assert warned.returncode == 0 and "imagePullPolicyy" in warned.stderr


def test_explain_reads_the_served_schemas(sim: Simulator) -> None:
    out = kubectl(sim, "explain", "nodepool.spec.disruption")
    assert out.returncode == 0, out.stderr
    assert "consolidationPolicy" in out.stdout and "karpenter.sh" in out.stdout
    core = kubectl(sim, "explain", "deployment.spec")
    assert core.returncode == 0 and "replicas" in core.stdout


def test_get_scale_and_roll_a_deployment(sim: Simulator) -> None:
    sim.load_objects([node("n1", cpu="32", memory="64Gi")])
    manifest = BAD_DEPLOYMENT.replace("imagePullPolicyy", "imagePullPolicy")
    created = kubectl(sim, "apply", "--server-side", "-f", "-", stdin=manifest)  # server-side apply creates it
    assert created.returncode == 0 and "serverside-applied" in created.stdout, created.stderr
    wait_for(lambda: "1/1" in kubectl(sim, "get", "deploy", "typo").stdout, what="1/1 ready")
    scaled = kubectl(sim, "scale", "deploy", "typo", "--replicas=3")
    assert scaled.returncode == 0, scaled.stderr
    wait_for(lambda: "3/3" in kubectl(sim, "get", "deploy", "typo").stdout, what="3/3 ready")
    assert kubectl(sim, "set", "image", "deploy/typo", "app=app:2").returncode == 0
    status = kubectl(sim, "rollout", "status", "deploy/typo", "--timeout=20s")
    assert status.returncode == 0 and "successfully rolled out" in status.stdout, status.stderr
    rs = kubectl(sim, "get", "rs", "-o", "jsonpath={range .items[*]}{.spec.replicas} {end}").stdout.split()
    assert sorted(rs) == ["0", "3"]
