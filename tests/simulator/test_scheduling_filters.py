"""The emulator's kube-scheduler filters as pure functions (simulator/scheduling_*.py): the rules the kube cases
file does not pin, and the FailedScheduling message word for word."""

from __future__ import annotations

from typing import Any

from simulator.scheduling_filters import feasible_nodes, filter_reasons, fit_error
from simulator.scheduling_requests import pod_requests

ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str = "z1", cpu: str = "4", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: zone}}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, on: str | None = None, labels: dict[str, str] | None = None, cpu: str = "1",
        ns: str = "default", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}
    if on:
        body["nodeName"] = on
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": body}


def spread(key: str = ZONE, **extra: Any) -> list[dict[str, Any]]:
    return [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}, **extra}]


def test_requests_add_sidecars_to_the_containers_and_take_the_largest_init_peak_plus_overhead() -> None:
    p = pod("p", cpu="1", initContainers=[
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
        overhead={"cpu": "100m"})
    # containers 1 + sidecar 0.5 = 1.5; init peak = migrate 2 + sidecar 0.5 = 2.5; + overhead 0.1
    assert pod_requests(p) == {"cpu": 2600, "memory": 1024 ** 3}


def test_a_pod_asking_nothing_fits_an_overcommitted_node_but_not_a_full_pod_count() -> None:
    n = node("a", cpu="1")
    hog = pod("hog", "a", cpu="2")
    empty = {"metadata": {"name": "e", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}}
    assert feasible_nodes(empty, [n], [hog]) == ["a"]
    n["status"]["allocatable"]["pods"] = "1"
    assert filter_reasons(empty, [n], [hog]) == {"a": ["Too many pods"]}


def test_min_domains_holds_the_global_minimum_at_zero_until_enough_zones_exist() -> None:
    nodes = [node("a", "z1"), node("b", "z2")]
    existing = [pod("w1", "a", {"app": "web"}), pod("w2", "b", {"app": "web"})]
    web = {"app": "web"}
    assert feasible_nodes(pod("n", labels=web, topologySpreadConstraints=spread()), nodes, existing) == ["a", "b"]
    three = pod("n", labels=web, topologySpreadConstraints=spread(minDomains=3))
    assert feasible_nodes(three, nodes, existing) == []  # 1 + 1 - 0 > 1 in both zones


def test_taints_count_as_spread_domains_unless_node_taints_policy_honors_them() -> None:
    tainted = node("c", "z3", taints=[{"key": "gpu", "effect": "NoSchedule"}])
    nodes = [node("a", "z1"), node("b", "z2"), tainted]
    existing = [pod("w1", "a", {"app": "web"}), pod("w2", "b", {"app": "web"})]
    ignore = pod("n", labels={"app": "web"}, topologySpreadConstraints=spread())
    assert feasible_nodes(ignore, nodes, existing) == []  # z3 is a domain with 0: a and b are at skew 2
    honor = pod("n", labels={"app": "web"}, topologySpreadConstraints=spread(nodeTaintsPolicy="Honor"))
    assert feasible_nodes(honor, nodes, existing) == ["a", "b"]


def test_match_label_keys_narrow_the_selector_to_the_pods_own_revision() -> None:
    nodes = [node("a", "z1"), node("b", "z2")]
    old = [pod(f"old{i}", "a", {"app": "web", "rev": "1"}) for i in range(3)]
    new = pod("n", labels={"app": "web", "rev": "2"}, topologySpreadConstraints=spread(matchLabelKeys=["rev"]))
    assert feasible_nodes(new, nodes, old) == ["a", "b"]
    plain = pod("n", labels={"app": "web", "rev": "2"}, topologySpreadConstraints=spread())
    assert feasible_nodes(plain, nodes, old) == ["b"]


def test_an_existing_pods_anti_affinity_keeps_the_incoming_pod_out_of_its_zone() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"team": "b"}}}]}}
    nodes = [node("a", "z1"), node("a2", "z1"), node("b", "z2")]
    loner = pod("loner", "a", affinity=anti)
    assert feasible_nodes(pod("n", labels={"team": "b"}), nodes, [loner]) == ["b"]
    assert feasible_nodes(pod("n", labels={"team": "b"}, ns="other"), nodes, [loner]) == ["a", "a2", "b"]


def test_namespace_selector_reaches_pods_of_labelled_namespaces() -> None:
    term = {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "db"}},
            "namespaceSelector": {"matchLabels": {"tier": "data"}}}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    nodes = [node("a", "z1"), node("b", "z2")]
    db = pod("db", "b", {"app": "db"}, ns="data")
    namespaces = [{"metadata": {"name": "data", "labels": {"tier": "data"}}}]
    assert feasible_nodes(pod("n", affinity=affinity), nodes, [db], namespaces=namespaces) == ["b"]
    assert feasible_nodes(pod("n", affinity=affinity), nodes, [db]) == []  # `data` unlabelled: no pod matches


def _claim(name: str, cls: str, volume: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "5Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _with_claim(name: str) -> dict[str, Any]:
    return pod("p", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": name}}])


def test_wait_for_first_consumer_follows_allowed_topologies_and_immediate_unbound_refuses_all() -> None:
    nodes = [node("a", "z1"), node("b", "z2")]
    wffc = {"metadata": {"name": "zonal"}, "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": ["z2"]}]}]}
    immediate = {"metadata": {"name": "now"}, "provisioner": "ebs.csi.aws.com"}
    assert feasible_nodes(_with_claim("c"), nodes, pvcs=[_claim("c", "zonal")], storage_classes=[wffc]) == ["b"]
    reasons = filter_reasons(_with_claim("c"), nodes, pvcs=[_claim("c", "now")], storage_classes=[immediate])
    assert reasons == {"a": ["pod has unbound immediate PersistentVolumeClaims"],
                       "b": ["pod has unbound immediate PersistentVolumeClaims"]}


def test_a_static_volume_binds_only_where_its_node_affinity_admits() -> None:
    nodes = [node("a", "z1"), node("b", "z2")]
    local = {"provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
             "metadata": {"name": "local"}}
    pv = {"metadata": {"name": "pv1"}, "spec": {
        "capacity": {"storage": "10Gi"}, "storageClassName": "local", "accessModes": ["ReadWriteOnce"],
        "nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}]}]}}}}
    claim = _claim("c", "local")
    assert feasible_nodes(_with_claim("c"), nodes, pvs=[pv], pvcs=[claim], storage_classes=[local]) == ["a"]
    small = {**pv, "spec": {**pv["spec"], "capacity": {"storage": "1Gi"}}}
    assert feasible_nodes(_with_claim("c"), nodes, pvs=[small], pvcs=[claim], storage_classes=[local]) == []


def test_the_fit_error_reads_as_kube_schedulers() -> None:
    nodes = [node("a"), node("b", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
             node("c", cpu="500m")]
    web = pod("n", containers=[{"name": "c", "resources": {"requests": {"cpu": "1"}},
                                "ports": [{"containerPort": 80, "hostPort": 80}]}])
    holder = pod("h", "a", containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}])
    reasons = filter_reasons(web, nodes, [holder])
    assert fit_error(3, reasons) == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't have free ports for the requested pod ports, "
        "1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod..")
    # as a cluster shows it (kubectl describe pod, kube v1.3x)
    assert fit_error(3, {}, 'persistentvolumeclaim "rc-definitely-missing-pvc" not found') == (
        '0/3 nodes are available: persistentvolumeclaim "rc-definitely-missing-pvc" not found. preemption: 0/3 '
        'nodes are available: 3 No preemption victims found for incoming pod..')
    assert fit_error(0, {}) == "no nodes available to schedule pods"


def test_match_label_keys_in_pod_anti_affinity_keep_apart_only_the_same_revision() -> None:
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}},
            "matchLabelKeys": ["rev"]}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    nodes = [node("a"), node("b")]
    old = [pod("old", "a", {"app": "web", "rev": "1"}), pod("new0", "b", {"app": "web", "rev": "2"})]
    assert feasible_nodes(pod("new1", labels={"app": "web", "rev": "2"}, affinity=anti), nodes, old) == ["a"]
    plain = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {k: v for k, v in term.items() if k != "matchLabelKeys"}]}}
    assert feasible_nodes(pod("new1", labels={"app": "web", "rev": "2"}, affinity=plain), nodes, old) == []
