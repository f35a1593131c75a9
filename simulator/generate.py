"""Realistic cluster snapshots (docs/contracts.md §1) for tests, the demo and benchmarks.

`generate_cluster(nodes, pods_per_node, seed)` returns the objects of a cluster run by Karpenter: two
NodePools (general: spot + on-demand amd64; arm: on-demand arm64), a NodeClaim per Node, Deployments as
ReplicaSets whose pods are spread over the nodes, PodDisruptionBudgets (a few that allow nothing),
DaemonSets with one pod per node, some `karpenter.sh/do-not-disrupt` pods, some drifted nodes (NodeClaim
`Drifted` condition or an outdated `nodeflow.dev/template-hash`), some empty nodes, mixed instance types
from the default catalog and three zones. The same seed gives the same cluster (timestamps are relative
to `now`).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from api import labels as L
from api.catalog import InstanceType, InstanceTypeCatalog, load_default_catalog
from api.nodepool import NodePool
from api.quantity import format_cpu, parse_cpu, parse_memory

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
NAMESPACES = ("shop", "payments", "search", "analytics", "platform")
APPS = ("web", "api", "worker", "cache", "gateway", "indexer", "scheduler", "auth", "cart", "feed", "ledger",
        "notify", "report", "ingest", "render")
CPU_CHOICES = (0.05, 0.1, 0.1, 0.1, 0.15, 0.25, 0.25, 0.5)
MEM_CHOICES_MI = (64, 128, 128, 256, 256, 512, 512, 1024, 2048)
GENERAL_TYPES = ("m5.large", "m5.xlarge", "m5.2xlarge", "m6i.xlarge", "m6i.2xlarge", "m6a.xlarge", "c5.xlarge",
                 "c5.2xlarge", "c6i.2xlarge", "r5.large", "r5.xlarge", "m7i.xlarge", "m5.4xlarge", "c5.4xlarge")
ARM_TYPES = ("m6g.large", "m6g.xlarge", "m6g.2xlarge", "c6g.xlarge", "c6g.2xlarge")
DAEMONSETS = (("kube-proxy", "100m", "64Mi", "system-node-critical"),
              ("node-exporter", "50m", "64Mi", None))


_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _mem(mi: int) -> str:
    return f"{mi // 1024}Gi" if mi % 1024 == 0 else f"{mi}Mi"


@dataclass
class _Workload:
    name: str
    namespace: str
    cpu: float
    mem_mi: int
    uid: str
    pods: list[str] = field(default_factory=list)
    do_not_disrupt: bool = False
    critical: bool = False


class _Gen:
    def __init__(self, seed: int, now: datetime, catalog: InstanceTypeCatalog) -> None:
        self.rng = random.Random(seed)
        self.now = now
        self.catalog = catalog
        self.used: set[tuple[str, str]] = set()

    def unique(self, namespace: str, prefix: str) -> str:
        """`prefix-xxxxx`, never repeated within a namespace."""
        while True:
            name = f"{prefix}-{self.suffix()}"
            if (namespace, name) not in self.used:
                self.used.add((namespace, name))
                return name

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, n: int = 5) -> str:
        """A Kubernetes-style random name suffix (one random draw: this runs once per generated pod)."""
        value = self.rng.getrandbits(5 * n)
        chars = []
        for _ in range(n):
            value, r = divmod(value, 27)
            chars.append(_ALPHABET[r])
        return "".join(chars)

    def ago(self, max_hours: float, min_hours: float = 0.0) -> str:
        return _ts(self.now - timedelta(hours=self.rng.uniform(min_hours, max_hours)))


def _nodepools() -> list[dict[str, Any]]:
    general = {
        "apiVersion": L.API_VERSION, "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {
            "template": {
                "metadata": {"labels": {"workload-class": "general"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
                        {"key": L.ZONE_LABEL, "operator": "In", "values": list(ZONES)},
                    ],
                    "expireAfter": "720h",
                    "terminationGracePeriod": "24h",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m",
                           "budgets": [{"nodes": "10%"}]},
            "limits": {"cpu": "100000", "memory": "400000Gi"},
            "weight": 10,
        },
    }
    arm = {
        "apiVersion": L.API_VERSION, "kind": "NodePool",
        "metadata": {"name": "arm"},
        "spec": {
            "template": {
                "metadata": {"labels": {"workload-class": "arm"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                        {"key": L.ARCH_LABEL, "operator": "In", "values": ["arm64"]},
                    ],
                    "expireAfter": "720h",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m",
                           "budgets": [{"nodes": "20%"}, {"nodes": "0", "reasons": ["Drifted"],
                                                          "schedule": "0 0 * * sat", "duration": "1h"}]},
        },
    }
    for pool in (general, arm):
        pool["metadata"]["uid"] = _pool_uid(pool["metadata"]["name"])
    return [general, arm]


def generate_cluster(nodes: int, pods_per_node: int, seed: int = 0, *, empty_fraction: float = 0.05,
                     drift_fraction: float = 0.05, do_not_disrupt_fraction: float = 0.02,
                     blocking_pdb_fraction: float = 0.05, spot_fraction: float = 0.4, arm_fraction: float = 0.15,
                     now: datetime | None = None, catalog: InstanceTypeCatalog | None = None) -> list[dict[str, Any]]:
    """A cluster of `nodes` nodes with about `pods_per_node` pods each (DaemonSet pods included)."""
    if nodes < 0 or pods_per_node < 0:
        raise ValueError("nodes and pods_per_node must not be negative")
    g = _Gen(seed, now or datetime.now(UTC).replace(microsecond=0), catalog or load_default_catalog())
    pools = _nodepools()
    pool_hash = {p["metadata"]["name"]: NodePool.model_validate(p).template_hash() for p in pools}
    objects: list[dict[str, Any]] = [*pools]
    node_objs: list[dict[str, Any]] = []
    claim_objs: list[dict[str, Any]] = []
    daemon_count = len(DAEMONSETS) if pods_per_node > len(DAEMONSETS) else 0
    app_per_node = max(pods_per_node - daemon_count, 0)
    for i in range(nodes):
        arm = g.rng.random() < arm_fraction
        pool = "arm" if arm else "general"
        itype = _pick_type(g, ARM_TYPES if arm else GENERAL_TYPES, pods_per_node)
        zone = ZONES[i % len(ZONES)] if g.rng.random() < 0.7 else g.rng.choice(ZONES)
        cap = L.CAPACITY_SPOT if (not arm and g.rng.random() < spot_fraction) else L.CAPACITY_ON_DEMAND
        node, claim = _node_and_claim(g, i, pool, itype, zone, cap, pool_hash[pool], drift_fraction)
        node_objs.append(node)
        claim_objs.append(claim)
    objects += claim_objs + node_objs

    workloads = _workloads(g, nodes * app_per_node)
    pods: list[dict[str, Any]] = []
    empty = {i for i in range(nodes) if g.rng.random() < empty_fraction}
    smallest = min(workloads, key=lambda x: (x.cpu, x.mem_mi))
    for i, node in enumerate(node_objs):
        if i in empty:
            continue
        _fill_node(g, node, workloads, smallest, app_per_node, pods, do_not_disrupt_fraction)
    used = [w for w in workloads if w.pods]
    objects += [_replicaset(g, w) for w in used]
    objects += _daemonsets(g, node_objs if daemon_count else [], pods)
    objects += pods
    objects += _pdbs(g, used, blocking_pdb_fraction)
    return objects


def _pick_type(g: _Gen, names: tuple[str, ...], pods_per_node: int) -> InstanceType:
    """A type that holds the pods by count and, at about 0.2 cores a pod, by cpu."""
    fits = [g.catalog.get(n) for n in names if g.catalog.get(n) is not None]
    fits = [it for it in fits if it.pods >= pods_per_node and it.cpu_cores >= pods_per_node * 0.2] or [
        max((it for it in g.catalog.instance_types), key=lambda it: it.pods)]
    return g.rng.choice(fits)


def _node_and_claim(g: _Gen, i: int, pool: str, it: InstanceType, zone: str, cap: str, current_hash: str,
                    drift_fraction: float) -> tuple[dict[str, Any], dict[str, Any]]:
    name = f"ip-10-{(i >> 16) & 255}-{(i >> 8) & 255}-{i & 255}.ec2.internal"
    claim_name = g.unique("", pool)
    iid = f"i-{g.rng.getrandbits(68):017x}"
    pid = f"aws:///{zone}/{iid}"
    created = g.ago(24 * 25, 0.5)
    labels = {
        L.NODEPOOL_LABEL: pool, L.INSTANCE_TYPE_LABEL: it.name, "beta.kubernetes.io/instance-type": it.name,
        L.CAPACITY_TYPE_LABEL: cap, L.ZONE_LABEL: zone, L.REGION_LABEL: "us-east-1", L.ARCH_LABEL: it.arch,
        L.OS_LABEL: "linux", L.HOSTNAME_LABEL: name, L.INITIALIZED_LABEL: "true", L.REGISTERED_LABEL: "true",
        "workload-class": pool,
    }
    resources = {"cpu": it.cpu, "memory": it.memory, "pods": str(it.pods), "ephemeral-storage": it.ephemeral_storage}
    drift = g.rng.random() < drift_fraction
    conditions = [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": created}
                  for t in ("Launched", "Registered", "Initialized", "Ready")]
    template_hash = current_hash
    if drift:
        if g.rng.random() < 0.5:
            conditions.append({"type": "Drifted", "status": "True", "reason": "NodePoolDrifted", "message": "",
                               "lastTransitionTime": g.ago(2)})
        else:
            template_hash = f"{g.rng.getrandbits(64):016x}"
    claim_uid = g.uid()
    claim = {
        "apiVersion": L.API_VERSION, "kind": "NodeClaim",
        "metadata": {"name": claim_name, "uid": claim_uid, "creationTimestamp": created, "labels": dict(labels),
                     "annotations": {L.TEMPLATE_HASH_ANNOTATION: template_hash},
                     "finalizers": [L.TERMINATION_FINALIZER],
                     "ownerReferences": [{"apiVersion": L.API_VERSION, "kind": "NodePool", "name": pool,
                                          "uid": _pool_uid(pool), "blockOwnerDeletion": True}]},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                 "requirements": [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": [it.name]},
                                  {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": [cap]},
                                  {"key": L.ZONE_LABEL, "operator": "In", "values": [zone]}],
                 "expireAfter": "720h"},
        "status": {"providerID": pid, "nodeName": name, "imageID": "ami-0a1b2c3d4e5f60718",
                   "capacity": dict(resources), "allocatable": dict(resources), "conditions": conditions,
                   "lastPodEventTime": g.ago(6)},
    }
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": g.uid(), "creationTimestamp": created, "labels": labels,
                     "finalizers": [L.TERMINATION_FINALIZER],
                     "ownerReferences": [{"apiVersion": L.API_VERSION, "kind": "NodeClaim", "name": claim_name,
                                          "uid": claim_uid, "blockOwnerDeletion": True}]},
        "spec": {"providerID": pid},
        "status": {
            "capacity": dict(resources), "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status", "lastTransitionTime": created,
                            "lastHeartbeatTime": _ts(g.now)}],
            "addresses": [{"type": "InternalIP", "address": f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": node_info(iid, it.arch),
        },
    }
    return node, claim


def node_info(machine_id: str, arch: str) -> dict[str, str]:
    """A complete NodeSystemInfo (the kubernetes client rejects a Node whose nodeInfo lacks a field)."""
    return {"machineID": machine_id, "systemUUID": machine_id, "bootID": machine_id, "kernelVersion": "6.1.0",
            "osImage": "Amazon Linux 2023", "containerRuntimeVersion": "containerd://1.7.0",
            "kubeletVersion": "v1.32.0", "kubeProxyVersion": "v1.32.0", "operatingSystem": "linux",
            "architecture": arch}


def _pool_uid(pool: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"nodeflow-sim/nodepool/{pool}"))


def _workloads(g: _Gen, total_pods: int) -> list[_Workload]:
    count = max(1, total_pods // 8)
    out: list[_Workload] = []
    seen: set[tuple[str, str]] = set()
    while len(out) < count:
        ns = g.rng.choice(NAMESPACES)
        name = f"{g.rng.choice(APPS)}-{g.suffix(4)}-{g.suffix(5)}"
        if (ns, name) in seen:
            continue
        seen.add((ns, name))
        out.append(_Workload(name=name, namespace=ns, cpu=g.rng.choice(CPU_CHOICES),
                             mem_mi=g.rng.choice(MEM_CHOICES_MI), uid=g.uid(),
                             critical=g.rng.random() < 0.03))
    for w in out:
        w.do_not_disrupt = g.rng.random() < 0.03
    return out


def _fill_node(g: _Gen, node: dict[str, Any], workloads: list[_Workload], smallest: _Workload, count: int,
               pods: list[dict[str, Any]], dnd_fraction: float) -> None:
    alloc = node["status"]["allocatable"]
    cpu_left = parse_cpu(alloc["cpu"]) * 0.9 - 0.15
    mem_left = parse_memory(alloc["memory"]) / 2**20 * 0.9 - 128
    arch = node["metadata"]["labels"][L.ARCH_LABEL]
    for _ in range(count):
        for _attempt in range(8):
            w = g.rng.choice(workloads)
            if w.cpu <= cpu_left and w.mem_mi <= mem_left:
                break
        else:
            w = smallest
            if w.cpu > cpu_left or w.mem_mi > mem_left:
                return
        cpu_left -= w.cpu
        mem_left -= w.mem_mi
        pods.append(_app_pod(g, w, node, arch, dnd_fraction))


def _app_pod(g: _Gen, w: _Workload, node_obj: dict[str, Any], arch: str, dnd_fraction: float) -> dict[str, Any]:
    node = node_obj["metadata"]["name"]
    node_created = datetime.strptime(node_obj["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    node_age_hours = (g.now.replace(tzinfo=None) - node_created).total_seconds() / 3600
    name = g.unique(w.namespace, w.name)
    w.pods.append(name)
    annotations = {}
    if w.do_not_disrupt or g.rng.random() < dnd_fraction:
        annotations[L.DO_NOT_DISRUPT_ANNOTATION] = "true"
    spec = _pod_spec(w.name.rsplit("-", 2)[0], format_cpu(w.cpu), _mem(w.mem_mi), g.rng.choice((30, 30, 60, 120)))
    spec["nodeName"] = node
    spec["nodeSelector"] = {L.ARCH_LABEL: arch} if arch == "arm64" else {}
    if not spec["nodeSelector"]:
        del spec["nodeSelector"]
    if w.critical:
        spec["priorityClassName"] = "system-cluster-critical"
        spec["priority"] = 2000000000
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": w.namespace, "uid": g.uid(),
                     "creationTimestamp": g.ago(max(node_age_hours, 0.0)),
                     "labels": {"app": w.name.rsplit("-", 1)[0], "pod-template-hash": w.name.rsplit("-", 1)[1]},
                     "annotations": annotations,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": w.name,
                                          "uid": w.uid, "controller": True, "blockOwnerDeletion": True}]},
        "spec": spec,
    }


def _pod_spec(app: str, cpu: str, mem: str, grace: int) -> dict[str, Any]:
    return {"containers": [{"name": app, "image": f"registry.example.com/{app}:1.0",
                            "resources": {"requests": {"cpu": cpu, "memory": mem}}}],
            "terminationGracePeriodSeconds": grace, "schedulerName": "default-scheduler",
            "restartPolicy": "Always"}


def _replicaset(g: _Gen, w: _Workload) -> dict[str, Any]:
    app, template_hash = w.name.rsplit("-", 1)
    pod_labels = {"app": app, "pod-template-hash": template_hash}
    spec = _pod_spec(app.rsplit("-", 1)[0], format_cpu(w.cpu), _mem(w.mem_mi), 30)
    if w.critical:
        spec["priorityClassName"] = "system-cluster-critical"
        spec["priority"] = 2000000000
    template_meta: dict[str, Any] = {"labels": pod_labels}
    if w.do_not_disrupt:
        template_meta["annotations"] = {L.DO_NOT_DISRUPT_ANNOTATION: "true"}
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": w.name, "namespace": w.namespace, "uid": w.uid, "creationTimestamp": g.ago(24 * 30, 24),
                     "labels": pod_labels},
        "spec": {"replicas": len(w.pods), "selector": {"matchLabels": pod_labels},
                 "template": {"metadata": template_meta, "spec": spec}},
        "status": {"replicas": len(w.pods), "readyReplicas": len(w.pods), "availableReplicas": len(w.pods)},
    }


def _daemonsets(g: _Gen, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not nodes:
        return []
    out = []
    for name, cpu, mem, priority_class in DAEMONSETS:
        uid = g.uid()
        labels = {"app": name}
        spec = _pod_spec(name, cpu, mem, 30)
        if priority_class:
            spec["priorityClassName"] = priority_class
            spec["priority"] = 2000001000
        out.append({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system", "uid": uid, "creationTimestamp": g.ago(24 * 60,
                                                                                                          24 * 30)},
            "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
                                                                       "spec": spec}},
        })
        for node in nodes:
            pod_spec = _pod_spec(name, cpu, mem, 30)
            if priority_class:
                pod_spec["priorityClassName"] = priority_class
                pod_spec["priority"] = 2000001000
            pod_spec["nodeName"] = node["metadata"]["name"]
            pod_spec["tolerations"] = [{"operator": "Exists"}]
            pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": g.unique("kube-system", name), "namespace": "kube-system", "uid": g.uid(),
                             "creationTimestamp": node["metadata"]["creationTimestamp"], "labels": dict(labels),
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                                                  "uid": uid, "controller": True, "blockOwnerDeletion": True}]},
                "spec": pod_spec,
            })
    return out


def _pdbs(g: _Gen, workloads: list[_Workload], blocking_fraction: float) -> list[dict[str, Any]]:
    out = []
    names: set[tuple[str, str]] = set()
    for w in workloads:
        if len(w.pods) < 2 or g.rng.random() > 0.6:
            continue
        app, template_hash = w.name.rsplit("-", 1)
        if (w.namespace, app) in names:
            continue
        names.add((w.namespace, app))
        roll = g.rng.random()
        if roll < blocking_fraction:
            spec: dict[str, Any] = {"maxUnavailable": 0}
        elif roll < 0.5:
            spec = {"maxUnavailable": 1}
        elif roll < 0.75:
            spec = {"maxUnavailable": "25%"}
        else:
            spec = {"minAvailable": max(len(w.pods) - 1, 1)}
        spec["selector"] = {"matchLabels": {"app": app, "pod-template-hash": template_hash}}
        out.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": app, "namespace": w.namespace, "uid": g.uid(),
                                 "creationTimestamp": g.ago(24 * 30, 24)},
                    "spec": spec})
    return out
