"""runtime/lean_kubernetes.py: the worker imports only the kubernetes client classes it uses, and every name
resolves to the object the whole package gives. Each check runs in a fresh interpreter (this one has the whole
package imported already)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from runtime.lean_kubernetes import install

ROOT = Path(__file__).resolve().parents[2]
USED = ["CoreV1Api", "CustomObjectsApi", "PolicyV1Api", "StorageV1Api", "AppsV1Api", "CoordinationV1Api",
        "VersionApi", "ApiClient", "Configuration", "ApiException", "V1Lease", "V1LeaseSpec", "V1ObjectMeta",
        "V1CSINode"]  # the worker's (gateways/kube.py, runtime/leader.py ...), and a model whose module name is not
# its class name in snake case (v1_csi_node)
PROBE = """
import json, sys
lean = sys.argv[1] == "lean"
if lean:
    from runtime.lean_kubernetes import install
    assert install()
from kubernetes import client as k8s, config, watch
from kubernetes.client.rest import ApiException
import kubernetes
used = {used}
where = {{n: getattr(k8s, n).__module__ + "." + getattr(k8s, n).__qualname__ for n in used}}
class Answer:
    data = json.dumps({{"metadata": {{"name": "l"}}, "spec": {{"holderIdentity": "a_1", "leaseDurationSeconds": 15}}}})
lease = k8s.ApiClient().deserialize(Answer(), "V1Lease")
for line in open("/proc/self/status"):
    if line.startswith("VmRSS"):
        rss = int(line.split()[1]) / 1024
print(json.dumps({{"where": where, "lease": [type(lease).__name__, lease.spec.holder_identity],
                  "version": kubernetes.__version__, "same": k8s.ApiException is ApiException,
                  "modules": sum(1 for m in sys.modules if m.startswith("kubernetes")), "rss": rss}}))
"""


def _probe(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE.format(used=USED), mode], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return json.loads(out)


def test_every_name_the_worker_uses_resolves_as_the_whole_package_gives_it_for_less_memory() -> None:
    lean, whole = _probe("lean"), _probe("whole")
    assert lean["where"] == whole["where"]
    assert lean["lease"] == whole["lease"] == ["V1Lease", "a_1"]
    assert lean["version"] == whole["version"] and lean["same"] and whole["same"]
    assert lean["modules"] * 10 < whole["modules"], (lean["modules"], whole["modules"])
    assert lean["rss"] + 15 < whole["rss"], (lean["rss"], whole["rss"])  # 38 MB against 66 MB (2026-11-29)


def test_an_unknown_name_is_an_attribute_error() -> None:
    code = ("from runtime.lean_kubernetes import install; install()\n"
            "from kubernetes import client\n"
            "try:\n    client.NoSuchApi\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=60).stdout
    assert "has no attribute 'NoSuchApi'" in out


def test_nothing_changes_once_the_package_is_imported() -> None:
    import kubernetes.client  # noqa: F401  (the whole package, as this test process has it)

    assert install() is False
    assert type(sys.modules["kubernetes.client"]).__name__ == "module"
