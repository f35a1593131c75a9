"""The bundled 30-node demo cluster: every kind of disruption has something to do in it.

- pool `general` (on-demand): drifted nodes, underutilized nodes (multi-node consolidation) and well-used
  nodes that stay;
- pool `ci` (tainted for CI runners, `WhenEmpty`): nodes whose jobs have finished (emptiness); the taint keeps
  the pods that other disruptions evict from landing there, so they stay empty;
- pool `memory` (r-family, its workloads pinned there): one oversized node that a cheaper one can replace
  (single-node consolidation);
- pool `batch` (expireAfter 24h): nodes launched three days ago (expiration); its `reports` pods run only there and
  the pool has no spare room, so once the nodes expire the provisioner launches new batch nodes for them;
- pool `spot`: spot nodes, one of which receives an interruption warning during the demo; its `crawler` pods run
  only on spot capacity and no spot node has room for another, so scaling `crawler` up (the demo does, at 20 s)
  needs new spot nodes.
With `node_classes`, the NodePools launch from EC2NodeClasses (devstack/demo_aws.py): `memory` for the memory
pool, whose nodes run its image (status.imageID), so a newer image for it rolls them out by drift; `default` for
the rest.
Timestamps are relative to `now`, so the scenario is fresh whenever the demo starts. The workloads are Deployments,
each with the ReplicaSet its controller would make (named and labelled by the pod-template-hash); controllers (those
ReplicaSets and the node-agent DaemonSet) carry the uids their pods point at, so the simulator adopts the pods
instead of creating a second set.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from api import labels as L
from api.catalog import load_default_catalog
from devstack.demo_aws import BASE_IMAGE, CLASSES, node_class_object
from simulator.deployments import HASH_LABEL, REVISION, pod_template_hash

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
CI_TAINT = {"key": "nodeflow.dev/ci-runner", "value": "true", "effect": "NoSchedule"}


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(kind: str, name: str) -> str:
    return f"uid-{kind.lower()}-{name}"


def _pool(name: str, requirements: list[dict[str, Any]], budgets: list[dict[str, Any]], expire: str = "720h",
          consolidate_after: str = "30s", policy: str = "WhenEmptyOrUnderutilized",
          taints: list[dict[str, Any]] | None = None, node_class: str = "default") -> dict[str, Any]:
    template_spec: dict[str, Any] = {
        "requirements": requirements, "expireAfter": expire, "terminationGracePeriod": "10m",
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class}}
    if taints:
        template_spec["taints"] = taints
    return {"apiVersion": L.API_VERSION, "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"labels": {"team": "platform"}}, "spec": template_spec},
                     "disruption": {"consolidationPolicy": policy, "consolidateAfter": consolidate_after,
                                    "budgets": budgets}}}


def _req(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


class _Builder:
    def __init__(self, now: datetime, zones: tuple[str, ...] = ZONES) -> None:
        self.now = now
        self.zones = zones
        self.objects: list[dict[str, Any]] = []
        self.catalog = load_default_catalog()
        self.n = 0

    def node(self, pool: str, itype: str, capacity: str = "on-demand", age: timedelta = timedelta(hours=6),
             drifted: bool = False, taints: list[dict[str, Any]] | None = None, node_class: str = "default",
             image: str | None = None) -> str:
        self.n += 1
        name = f"{pool}-{self.n:02d}"
        zone = self.zones[self.n % len(self.zones)]
        it = self.catalog.get(itype)
        assert it is not None, itype
        created = _ts(self.now - age)
        node_labels = {L.NODEPOOL_LABEL: pool, L.INSTANCE_TYPE_LABEL: itype, L.CAPACITY_TYPE_LABEL: capacity,
                       L.ZONE_LABEL: zone, L.INITIALIZED_LABEL: "true", L.REGISTERED_LABEL: "true",
                       L.HOSTNAME_LABEL: name, L.ARCH_LABEL: it.arch, L.OS_LABEL: "linux", "team": "platform"}
        alloc = {"cpu": it.cpu, "memory": it.memory, "pods": str(it.pods), "ephemeral-storage": "20Gi"}
        provider = f"aws:///{zone}/i-{self.n:017x}"
        conditions = [{"type": "Launched", "status": "True", "lastTransitionTime": created},
                      {"type": "Registered", "status": "True", "lastTransitionTime": created},
                      {"type": "Initialized", "status": "True", "lastTransitionTime": created}]
        if drifted:
            conditions.append({"type": "Drifted", "status": "True", "reason": "NodePoolDrifted",
                               "lastTransitionTime": _ts(self.now - timedelta(minutes=30))})
        self.objects.append({"apiVersion": L.API_VERSION, "kind": "NodeClaim", "metadata": {
            "name": name, "labels": dict(node_labels), "creationTimestamp": created,
            "finalizers": [L.TERMINATION_FINALIZER]},
            "spec": {**({"taints": list(taints)} if taints else {}),
                     "requirements": [_req(L.INSTANCE_TYPE_LABEL, itype), _req(L.CAPACITY_TYPE_LABEL, capacity)],
                     "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class},
                     "terminationGracePeriod": "10m", **self._expire_after(pool)},
            "status": {**({"imageID": image} if image else {}), "nodeName": name, "providerID": provider,
                       "capacity": alloc, "allocatable": alloc,
                       "conditions": conditions, "lastPodEventTime": _ts(self.now - timedelta(hours=1))}})
        self.objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": node_labels, "creationTimestamp": created,
            "finalizers": [L.TERMINATION_FINALIZER]},
            "spec": {"providerID": provider, **({"taints": list(taints)} if taints else {})},
            "status": {"capacity": alloc, "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "lastTransitionTime": created}]}})
        self.daemon_pod(name)
        return name

    def _expire_after(self, pool: str) -> dict[str, str]:
        """The pool template's expireAfter, copied onto the claim as Karpenter's provisioner writes it; without
        it the API server defaults the claim's to 720h at its first update, and the batch nodes never expire."""
        for o in self.objects:
            if o["kind"] == "NodePool" and o["metadata"]["name"] == pool:
                return {"expireAfter": o["spec"]["template"]["spec"]["expireAfter"]}
        return {}

    def daemon_pod(self, node: str) -> None:
        self.objects.append(self._pod(f"node-agent-{node}", "kube-system", node, "50m", "64Mi",
                                      owner=("apps/v1", "DaemonSet", "node-agent"), labels={"app": "node-agent"},
                                      tolerate_all=True))

    def app(self, name: str, nodes: list[str], cpu: str, memory: str, per_node: int = 1, pdb: str | None = None,
            annotations: dict[str, str] | None = None, grace: int = 30,
            node_selector: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> None:
        """A Deployment, its ReplicaSet and their pods on `nodes` (with `node_selector`, they run nowhere else);
        `labels` go on the pod template (so on the pods the ReplicaSet makes later too), besides `app`."""
        spec = self._spec(cpu, memory, grace)
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        template = {"metadata": {"labels": {"app": name, **(labels or {})}}, "spec": spec}
        h = pod_template_hash(template)
        rs_name, pod_labels = f"{name}-{h}", {**template["metadata"]["labels"], HASH_LABEL: h}
        replicas = len(nodes) * per_node
        self.objects.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
            "name": name, "namespace": "default", "labels": {"app": name}, "uid": _uid("Deployment", name),
            "annotations": {REVISION: "1"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}})
        self.objects.append({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
            "name": rs_name, "namespace": "default", "labels": dict(pod_labels), "uid": _uid("ReplicaSet", rs_name),
            "annotations": {REVISION: "1"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "controller": True,
                                 "uid": _uid("Deployment", name)}]},
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(pod_labels)},
                     "template": {"metadata": {"labels": dict(pod_labels)}, "spec": copy.deepcopy(spec)}}})
        i = 0
        for node in nodes:
            for _ in range(per_node):
                i += 1
                pod = self._pod(f"{rs_name}-{i}", "default", node, cpu, memory, owner=("apps/v1", "ReplicaSet",
                                rs_name), labels=dict(pod_labels), annotations=annotations, grace=grace)
                if node_selector:
                    pod["spec"]["nodeSelector"] = dict(node_selector)
                self.objects.append(pod)
        if pdb:
            self.objects.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {
                "name": name, "namespace": "default"},
                "spec": {"maxUnavailable": int(pdb) if pdb.isdigit() else pdb,
                         "selector": {"matchLabels": {"app": name}}}})

    @staticmethod
    def _spec(cpu: str, memory: str, grace: int) -> dict[str, Any]:
        return {"terminationGracePeriodSeconds": grace,
                "containers": [{"name": "main", "image": "registry.example/app:1",
                                "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}

    def _pod(self, name: str, ns: str, node: str, cpu: str, memory: str, owner: tuple[str, str, str],
             labels: dict[str, str], annotations: dict[str, str] | None = None, grace: int = 30,
             tolerate_all: bool = False) -> dict[str, Any]:
        spec = self._spec(cpu, memory, grace)
        spec["nodeName"] = node
        if tolerate_all:
            spec["tolerations"] = [{"operator": "Exists"}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": ns, "labels": labels, "annotations": annotations or {},
            "creationTimestamp": _ts(self.now - timedelta(hours=2)),
            "ownerReferences": [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2], "controller": True,
                                 "uid": _uid(owner[1], owner[2])}]}, "spec": spec}

    def daemonset(self) -> None:
        """The node-agent DaemonSet, so that replacement nodes get their agent like the others."""
        spec = self._spec("50m", "64Mi", 30)
        spec["tolerations"] = [{"operator": "Exists"}]
        self.objects.append({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {
            "name": "node-agent", "namespace": "kube-system", "labels": {"app": "node-agent"},
            "uid": _uid("DaemonSet", "node-agent")},
            "spec": {"selector": {"matchLabels": {"app": "node-agent"}},
                     "template": {"metadata": {"labels": {"app": "node-agent"}}, "spec": spec}}})


ClusterBuilder = _Builder  # for other clusters built the demo's way (bench/consolidation_scale_cluster.py)


def demo_cluster(now: datetime | None = None, node_classes: bool = False,
                 zones: tuple[str, ...] = ZONES) -> list[dict[str, Any]]:
    """The demo's objects: 30 nodes in five NodePools, with workloads, PDBs and one do-not-disrupt pod; with
    `node_classes`, the two EC2NodeClasses of devstack/demo_aws.py too. Nodes take `zones` in turn (another
    region's, from devstack.demo_aws.region_zones, for `nodeflow demo --region`)."""
    now = now or datetime.now(UTC)
    b = _Builder(now, zones)
    od = [_req(L.CAPACITY_TYPE_LABEL, "on-demand"), _req(L.ARCH_LABEL, "amd64")]
    memory_class, memory_image = ("memory", BASE_IMAGE) if node_classes else ("default", None)
    if node_classes:
        b.objects += [node_class_object(name) for name in CLASSES]
    b.objects += [
        _pool("general", [*od, {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists"}][:2],
              [{"nodes": "20%"}]),
        _pool("memory", [*od, _req(L.INSTANCE_TYPE_LABEL, "r5.large", "r5.xlarge", "r5.2xlarge", "r6i.large",
                                   "r6i.xlarge", "r6i.2xlarge")], [{"nodes": "1"}], node_class=memory_class),
        _pool("batch", od, [{"nodes": "50%"}], expire="24h", consolidate_after="Never"),
        _pool("spot", [_req(L.CAPACITY_TYPE_LABEL, "spot"), _req(L.ARCH_LABEL, "amd64")], [{"nodes": "10%"}],
              consolidate_after="Never"),
        _pool("ci", od, [{"nodes": "100%"}],
              policy="WhenEmpty", taints=[CI_TAINT]),
    ]
    steady = [b.node("general", "m5.xlarge") for _ in range(8)]
    drifted = [b.node("general", "m5.xlarge", drifted=True) for _ in range(4)]
    empty = [b.node("ci", "m5.large", taints=[CI_TAINT]) for _ in range(3)]
    under = [b.node("general", "m5.2xlarge") for _ in range(5)]
    memory = [b.node("memory", "r5.2xlarge", node_class=memory_class, image=memory_image)]
    memory_steady = [b.node("memory", "r5.xlarge", node_class=memory_class, image=memory_image) for _ in range(2)]
    batch = [b.node("batch", "c5.xlarge", age=timedelta(days=3)) for _ in range(3)]
    spot = [b.node("spot", "c5.xlarge", capacity="spot") for _ in range(4)]
    assert len(b.objects) and b.n == 30, b.n
    del empty  # only their DaemonSet pods run there: the CI jobs have finished
    b.daemonset()
    b.app("web", steady + drifted, "1500m", "3Gi", per_node=2, pdb="1")
    b.app("api", under, "500m", "1Gi", per_node=2, pdb="1")
    # memory workloads stay in the memory pool (drift replaces its nodes there)
    b.app("cache", memory, "1", "12Gi", per_node=1, node_selector={L.NODEPOOL_LABEL: "memory"})
    b.app("sessions", memory_steady, "1", "20Gi", per_node=1, node_selector={L.NODEPOOL_LABEL: "memory"})
    # expired batch nodes: their pods need new batch capacity
    b.app("reports", batch, "1", "2Gi", per_node=2, node_selector={L.NODEPOOL_LABEL: "batch"})
    # a crawler scale-up needs new spot nodes
    b.app("crawler", spot, "1500m", "2Gi", per_node=2, node_selector={L.CAPACITY_TYPE_LABEL: "spot"})
    b.app("ledger", steady[:1], "250m", "512Mi", annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"})
    return b.objects
