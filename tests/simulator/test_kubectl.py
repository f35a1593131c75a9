"""kubectl against the simulator: get, delete (Terminating under a finalizer), drain blocked by a PDB."""

from __future__ import annotations

import subprocess

import pytest
from support.sim_objects import node, pdb, replicaset, wait_for

from devstack.binaries import find_binary
from simulator.server import Simulator

KUBECTL = find_binary("kubectl", required=False)
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (scripts/setup.sh installs it)")
WEB = {"app": "web"}


def kubectl(sim: Simulator, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL or "kubectl", "--kubeconfig", sim.kubeconfig_path, *args], capture_output=True,
                          text=True, timeout=timeout)


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
