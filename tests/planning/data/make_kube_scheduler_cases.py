"""Writes kube_scheduler_cases.yaml: kube-scheduler plugin test cases as plain Kubernetes objects.

Each case names the kube-scheduler test file and test it restates (kubernetes/kubernetes
pkg/scheduler/framework/plugins/...). The plugin tests run ONE plugin; the expectation here is the whole
filter chain (NodeResourcesFit, NodeAffinity, TaintToleration, NodePorts, InterPodAffinity,
PodTopologySpread, VolumeBinding, VolumeZone), so every node gets ample allocatable (cpu 4, memory 16Gi,
pods 110) unless the case is about resources, namespaces "" become "default", and where the plugin test
says "in real case, it's false" the real-case answer is recorded (with a `note`). Cases marked
`derived: true` restate a rule of the plugin's code (named in `source`) where its tests check internal
state rather than a Filter outcome. Run: `.venv/bin/python tests/planning/data/make_kube_scheduler_cases.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

K8S = "kubernetes/kubernetes pkg/scheduler/framework/plugins/"
SPREAD = K8S + "podtopologyspread/filtering_test.go"
IPA = K8S + "interpodaffinity/filtering_test.go"
PORTS = K8S + "nodeports/node_ports_test.go"
FIT = K8S + "noderesources/fit_test.go"
VZONE = K8S + "volumezone/volume_zone_test.go"
VBIND = K8S + "volumebinding/volume_binding_test.go"
NAFF = K8S + "nodeaffinity/node_affinity_test.go"
AMPLE = {"cpu": "4", "memory": "16Gi", "pods": "110"}
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
HOST = "kubernetes.io/hostname"
UNSCHED_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
         alloc: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec, "status": {"allocatable": dict(alloc or AMPLE), "capacity": dict(alloc or AMPLE),
                                     "conditions": [{"type": "Ready", "status": "True"}]}}


def sel_exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def sel_in(key: str, values: list[str], op: str = "In") -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": op, "values": values}]}


def pod(name: str, node_name: str = "", labels: dict[str, str] | None = None, ns: str = "default",
        **spec: Any) -> dict[str, Any]:
    """A pod; `spec` keys are PodSpec fields (containers default to one with no requests)."""
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    body.update(spec)
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns,
                                                           "labels": dict(labels or {})},
            "spec": body, "status": {"phase": "Running" if node_name else "Pending"}}


def spread(max_skew: int, key: str, selector: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule"}
    if selector is not None:
        c["labelSelector"] = selector
    c.update(extra)
    return c


def term(selector: dict[str, Any], key: str, namespaces: list[str] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": selector, "topologyKey": key}
    if namespaces:
        t["namespaces"] = namespaces
    return t


def affinity(pod_aff: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None,
             node_terms: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if pod_aff:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": pod_aff}
    if anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    if node_terms:
        out["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": node_terms}}
    return out


def case(source: str, name: str, p: dict[str, Any], nodes: list[dict[str, Any]], feasible: list[str],
         existing: list[dict[str, Any]] | None = None, note: str = "", derived: bool = False,
         pvs: list[dict[str, Any]] | None = None, pvcs: list[dict[str, Any]] | None = None,
         scs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"source": source, "name": name, "pod": p, "nodes": nodes,
                         "existingPods": existing or [], "pvs": pvs or [], "pvcs": pvcs or [],
                         "storageClasses": scs or [], "expect": {"feasibleNodes": sorted(feasible)}}
    if note:
        c["note"] = note
    if derived:
        c["derived"] = True
    return c


def four_nodes(**per_node: dict[str, str]) -> list[dict[str, Any]]:
    """node-a, node-b (zone1), node-x, node-y (zone2), each with a `node` label naming it."""
    zones = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    return [node(n, {"zone": z, "node": n, **per_node.get(n.replace("-", "_"), {})}) for n, z in zones.items()]


def foo_pods(*where: str, label: str = "foo") -> list[dict[str, Any]]:
    return [pod(f"p-{n}-{i}", n, {label: ""}) for i, n in enumerate(where)]


def spread_cases() -> list[dict[str, Any]]:
    foo, bar = sel_exists("foo"), sel_exists("bar")
    spread_2103 = foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y")
    out = [
        case(SPREAD, "TestSingleConstraint/no existing pods",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", foo)]),
             four_nodes(), ["node-a", "node-b", "node-x", "node-y"]),
        case(SPREAD, "TestSingleConstraint/existing pods in a different namespace do not count",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", foo)]),
             four_nodes(), ["node-a", "node-b"],
             existing=[pod("p-a1", "node-a", {"foo": ""}, ns="ns1"), pod("p-b1", "node-a", {"foo": ""}, ns="ns2"),
                       pod("p-x1", "node-x", {"foo": ""}), pod("p-y1", "node-y", {"foo": ""})]),
        case(SPREAD, "TestSingleConstraint/existing pods do not match null selector",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", None)]),
             four_nodes(), ["node-a", "node-b", "node-x", "node-y"],
             existing=[pod("p-x1", "node-x", {"foo": ""}), pod("p-y1", "node-y", {"foo": ""})]),
        case(SPREAD, "TestSingleConstraint/pods spread across zones as 3/3, all nodes fit",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", foo)]),
             four_nodes(), ["node-a", "node-b", "node-x", "node-y"], existing=spread_2103),
        case(SPREAD, "TestSingleConstraint/pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", foo)]),
             [node("node-a", {"zone": "zone1", "node": "node-a"}), node("node-b", {"zon": "zone1", "node": "node-b"}),
              node("node-x", {"zone": "zone2", "node": "node-x"}), node("node-y", {"zone": "zone2", "node": "node-y"})],
             ["node-a"], existing=foo_pods("node-a", "node-b", "node-x", "node-y")),
        case(SPREAD, "TestSingleConstraint/pod cannot be scheduled as all nodes don't have label 'rack'",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "rack", foo)]),
             [node("node-a", {"zone": "zone1", "node": "node-a"}), node("node-x", {"zone": "zone2", "node": "node-x"})],
             []),
        case(SPREAD, "TestSingleConstraint/pods spread across nodes as 2/1/0/3, only node-x fits",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "node", foo)]),
             four_nodes(), ["node-x"], existing=spread_2103),
        case(SPREAD, "TestSingleConstraint/pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(2, "node", foo)]),
             four_nodes(), ["node-b", "node-x"], existing=spread_2103),
        case(SPREAD, "TestSingleConstraint/pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
             pod("p", labels={"bar": ""}, topologySpreadConstraints=[spread(1, "node", foo)]),
             four_nodes(), ["node-b", "node-x"], existing=spread_2103),
        case(SPREAD, "TestSingleConstraint/incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, "
                     "hence node-a fits",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "node", foo)],
                 affinity=affinity(node_terms=[sel_in("node", ["node-a", "node-y"])])),
             four_nodes(), ["node-a"], existing=spread_2103,
             note="plugin test passes node-b and node-x too ('in real case, it's false'): NodeAffinity rejects them"),
        case(SPREAD, "TestSingleConstraint/terminating Pods should be excluded",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "node", foo)]),
             [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"})], ["node-a"],
             existing=[{**pod("p-a", "node-a", {"foo": ""}),
                        "metadata": {"name": "p-a", "namespace": "default", "labels": {"foo": ""},
                                     "deletionTimestamp": "2024-01-01T00:00:00Z"}},
                       pod("p-b", "node-b", {"foo": ""})]),
        case(SPREAD, "TestSingleConstraint/incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", foo)],
                 affinity=affinity(node_terms=[sel_in("node", ["node-b"], "NotIn")])),
             four_nodes(), ["node-a"], existing=foo_pods("node-b", "node-b", "node-y"),
             note="plugin test passes node-b too ('in real case, it's Unschedulable'): NodeAffinity rejects it"),
        case(SPREAD, "TestSingleConstraint/pods spread across nodes as 2/2/1, maxSkew is 2, and the number of "
                     "domains < minDomains, then the third node fits",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(2, "node", foo, minDomains=4)]),
             [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")], ["node-c"],
             existing=foo_pods("node-a", "node-a", "node-b", "node-b", "node-c")),
        case(SPREAD, "TestSingleConstraint/pods spread across nodes as 2/2/1, maxSkew is 2, and the number of "
                     "domains > minDomains, then the all nodes fit",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(2, "node", foo, minDomains=2)]),
             [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")], ["node-a", "node-b", "node-c"],
             existing=foo_pods("node-a", "node-a", "node-b", "node-b", "node-c")),
        case(SPREAD, "TestSingleConstraint/pods spread across zone as 2/1, maxSkew is 2 and the number of domains < "
                     "minDomains, then the third and fourth nodes fit",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(2, "zone", foo, minDomains=3)]),
             four_nodes(), ["node-x", "node-y"], existing=foo_pods("node-a", "node-b", "node-y")),
        case(SPREAD, "TestSingleConstraint/pods spread across zone as 2/1, maxSkew is 2 and the number of domains > "
                     "minDomains, then the all nodes fit",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(2, "zone", foo, minDomains=1)]),
             four_nodes(), ["node-a", "node-b", "node-x", "node-y"], existing=foo_pods("node-a", "node-b", "node-y")),
        case(SPREAD, "TestSingleConstraint/NodeAffinityPolicy honored with labelSelectors",
             pod("p", labels={"foo": ""}, nodeSelector={"foo": ""},
                 topologySpreadConstraints=[spread(1, "node", foo)]),
             [node("node-a", {"node": "node-a", "foo": ""}), node("node-b", {"node": "node-b", "foo": ""}),
              node("node-x", {"node": "node-x", "foo": ""}), node("node-y", {"node": "node-y"})],
             ["node-x"], existing=foo_pods("node-a", "node-b", "node-y"),
             note="plugin test passes node-y too: NodeAffinity rejects it"),
        case(SPREAD, "TestSingleConstraint/NodeAffinityPolicy ignored with labelSelectors",
             pod("p", labels={"foo": ""}, nodeSelector={"foo": ""},
                 topologySpreadConstraints=[spread(1, "node", foo, nodeAffinityPolicy="Ignore")]),
             [node("node-a", {"node": "node-a", "foo": ""}), node("node-b", {"node": "node-b", "foo": ""}),
              node("node-x", {"node": "node-x", "foo": ""}), node("node-y", {"node": "node-y"})],
             ["node-x"], existing=foo_pods("node-a", "node-b", "node-y")),
        case(SPREAD, "TestSingleConstraint/NodeTaintsPolicy ignored",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "node", foo)]),
             [node("node-a", {"node": "node-a", "foo": ""}), node("node-b", {"node": "node-b", "foo": ""}),
              node("node-x", {"node": "node-x", "foo": ""}),
              node("node-y", {"node": "node-y"}, taints=[UNSCHED_TAINT])],
             ["node-x"], existing=foo_pods("node-a", "node-b", "node-y")),
        case(SPREAD, "TestMultipleConstraints/two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", foo), spread(1, "node", foo)]),
             four_nodes(), ["node-x"], existing=spread_2103),
        case(SPREAD, "TestMultipleConstraints/two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", foo), spread(1, "node", foo)]),
             four_nodes(), [], existing=foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", "node-y")),
        case(SPREAD, "TestMultipleConstraints/Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
             pod("p", labels={"foo": "", "bar": ""},
                 topologySpreadConstraints=[spread(1, "zone", foo), spread(1, "node", bar)]),
             four_nodes(), ["node-x"],
             existing=[pod("p-a1", "node-a", {"foo": ""}), pod("p-y1", "node-y", {"bar": ""})]),
        case(SPREAD, "TestMultipleConstraints/Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
             pod("p", labels={"foo": "", "bar": ""},
                 topologySpreadConstraints=[spread(1, "zone", foo), spread(1, "node", bar)]),
             four_nodes(), [], existing=[pod("p-a1", "node-a", {"foo": ""}), pod("p-x1", "node-x", {"bar": ""}),
                                         pod("p-y1", "node-y", {"bar": ""})]),
    ]
    return out + spread_derived_cases()


def spread_derived_cases() -> list[dict[str, Any]]:
    """Rules of podtopologyspread/common.go and filtering.go whose tests check PreFilter state."""
    bar, foo = sel_exists("bar"), sel_exists("foo")
    src = K8S + "podtopologyspread/filtering.go"
    return [
        case(src, "TestPreFilterState/NodeTaintsPolicy honored with tolerated taints (as a Filter outcome)",
             pod("p", labels={"foo": ""}, tolerations=[{"key": "node.kubernetes.io/unschedulable",
                                                        "operator": "Exists", "effect": "NoSchedule"}],
                 topologySpreadConstraints=[spread(1, "node", bar, nodeTaintsPolicy="Honor")]),
             [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"}),
              node("node-c", {"node": "node-c", "bar": ""}, taints=[UNSCHED_TAINT])],
             ["node-a", "node-c"],
             existing=[pod("p-a", "node-a", {"bar": ""}), pod("p-b", "node-b", {"bar": ""}),
                       pod("p-c", "node-b", {"bar": ""}), pod("p-d", "node-c")],
             derived=True, note="counts a=1, b=2, c=0 (tolerated taint counts); pod does not match bar"),
        case(src, "NodeTaintsPolicy Honor drops an untolerated node's domain from the minimum",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "node", foo, nodeTaintsPolicy="Honor")]),
             [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"}),
              node("node-c", {"node": "node-c"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])],
             ["node-a", "node-b"], existing=foo_pods("node-a", "node-b"), derived=True,
             note="Ignore (default) would keep node-c's 0 as the minimum and reject a and b"),
        case(src, "NodeTaintsPolicy Ignore (default) keeps an untolerated node's domain in the minimum",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "node", foo)]),
             [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"}),
              node("node-c", {"node": "node-c"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])],
             [], existing=foo_pods("node-a", "node-b"), derived=True),
        case(src, "NodeAffinityPolicy Honor (default) drops a non-matching node's domain from the minimum",
             pod("p", labels={"foo": ""}, nodeSelector={"pool": "x"},
                 topologySpreadConstraints=[spread(1, "node", foo)]),
             [node("node-a", {"node": "node-a", "pool": "x"}), node("node-b", {"node": "node-b", "pool": "x"}),
              node("node-c", {"node": "node-c"})],
             ["node-a", "node-b"], existing=foo_pods("node-a", "node-b"), derived=True),
        case(src, "NodeAffinityPolicy Ignore keeps a non-matching node's domain in the minimum",
             pod("p", labels={"foo": ""}, nodeSelector={"pool": "x"},
                 topologySpreadConstraints=[spread(1, "node", foo, nodeAffinityPolicy="Ignore")]),
             [node("node-a", {"node": "node-a", "pool": "x"}), node("node-b", {"node": "node-b", "pool": "x"}),
              node("node-c", {"node": "node-c"})],
             [], existing=foo_pods("node-a", "node-b"), derived=True),
        case(src, "matchLabelKeys narrows the selector to the pod's own value of each key",
             pod("p", labels={"foo": "", "rev": "2"},
                 topologySpreadConstraints=[spread(1, "node", foo, matchLabelKeys=["rev"])]),
             [node(n, {"node": n}) for n in ("node-a", "node-b")], ["node-a"],
             existing=[pod("old-1", "node-a", {"foo": "", "rev": "1"}), pod("old-2", "node-a", {"foo": "", "rev": "1"}),
                       pod("new-1", "node-b", {"foo": "", "rev": "2"})],
             derived=True, note="without matchLabelKeys the counts are 2/1 and only node-b fits"),
        case(src, "ScheduleAnyway constraints never filter",
             pod("p", labels={"foo": ""}, topologySpreadConstraints=[
                 {**spread(1, "node", foo), "whenUnsatisfiable": "ScheduleAnyway"}]),
             [node(n, {"node": n}) for n in ("node-a", "node-b")], ["node-a", "node-b"],
             existing=foo_pods("node-a", "node-a", "node-a"), derived=True),
    ]


def affinity_cases() -> list[dict[str, Any]]:
    svc = {"service": "securityscan"}
    labels1 = {"region": "r1", "zone": "z11"}
    n1 = [node("node1", labels1)]
    existing = [pod("existing", "node1", svc)]
    single = "TestRequiredAffinitySingleNode/"
    multi = "TestRequiredAffinityMultipleNodes/"
    china, china_az, india = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}
    return [
        case(IPA, single + "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In "
                           "operator that matches the existing pod",
             pod("p", labels={"security": "S1"},
                 affinity=affinity([term(sel_in("service", ["securityscan", "value2"]), "region")])),
             n1, ["node1"], existing=existing),
        case(IPA, single + "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity "
                           "using not in operator in labelSelector that matches the existing pod",
             pod("p", labels={"security": "S1"},
                 affinity=affinity([term(sel_in("service", ["securityscan3", "value3"], "NotIn"), "region")])),
             n1, ["node1"], existing=existing),
        case(IPA, single + "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
             pod("p", labels={"security": "S1"},
                 affinity=affinity([term(sel_in("service", ["securityscan", "value2"]), "", ["DiffNameSpace"])])),
             n1, [], existing=[pod("existing", "node1", svc, ns="ns")]),
        case(IPA, single + "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
             pod("p", labels=svc, affinity=affinity([term(sel_in("service", ["antivirusscan", "value2"]), "")])),
             n1, [], existing=existing),
        case(IPA, single + "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
             pod("p", labels={"security": "S1"},
                 affinity=affinity([term(sel_in("service", ["securityscan", "value2"]), "region")],
                                   [term(sel_in("service", ["antivirusscan", "value2"]), "node")])),
             n1, ["node1"], existing=existing),
        case(IPA, single + "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
             pod("p", labels={"security": "S1"},
                 affinity=affinity([term(sel_in("service", ["securityscan", "value2"]), "region")],
                                   [term(sel_in("service", ["securityscan", "value2"]), "zone")])),
             n1, [], existing=existing),
        case(IPA, single + "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity "
                           "symmetry with the existing pod",
             pod("p", labels=svc,
                 affinity=affinity([term(sel_in("service", ["securityscan", "value2"]), "region")],
                                   [term(sel_in("service", ["antivirusscan", "value2"]), "node")])),
             n1, [], existing=[pod("existing", "node1", svc, affinity=affinity(
                 anti=[term(sel_in("service", ["securityscan", "value2"]), "zone")]))]),
        case(IPA, single + "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
                           "constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
             pod("p", labels=svc), n1, [], existing=[pod("existing", "node1", svc, affinity=affinity(
                 anti=[term(sel_in("service", ["securityscan", "value2"]), "zone")]))]),
        case(IPA, single + "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
                           "constraints. satisfy PodAntiAffinity symmetry with the existing pod",
             pod("p", labels=svc), n1, ["node1"], existing=[pod("existing", "node1", svc, affinity=affinity(
                 anti=[term(sel_in("service", ["securityscan", "value2"], "NotIn"), "zone")]))]),
        case(IPA, single + "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each "
                           "other on AffinityTerms",
             pod("p", labels={"security": "S1"}, affinity=affinity(anti=[term(sel_exists("security"), "zone")])),
             n1, [], existing=[pod("existing", "node1", svc, affinity=affinity(
                 anti=[term(sel_exists("service"), "zone"), term(sel_exists("security"), "zone")]))]),
        case(IPA, multi + "A pod can be scheduled onto all the nodes that have the same topology key & label value "
                          "with one of them has an existing pod that matches the affinity rules",
             pod("p", affinity=affinity([term(sel_in("foo", ["bar"]), "region")])),
             [node("node1", china), node("node2", china_az), node("node3", india)], ["node1", "node2"],
             existing=[pod("p1", "node1", {"foo": "bar"})]),
        case(IPA, multi + "The affinity rule is to schedule all of the pods of this collection to the same zone. The "
                          "first pod of the collection should not be blocked from being scheduled onto any node, even "
                          "there's no existing pod that matches the rule anywhere.",
             pod("p", labels={"foo": "bar", "service": "securityscan"},
                 affinity=affinity([term(sel_in("foo", ["bar"]), "zone"),
                                    term(sel_in("service", ["securityscan"]), "zone")])),
             [node("nodeA", {"zone": "az1", "hostname": "h1"}), node("nodeB", {"zone": "az2", "hostname": "h2"})],
             ["nodeA", "nodeB"], existing=[pod("p1", "nodeA", {"foo": "bar"})]),
        case(IPA, multi + "The first pod of the collection can only be scheduled on nodes labelled with the requested "
                          "topology keys",
             pod("p", labels={"foo": "bar", "service": "securityscan"},
                 affinity=affinity([term(sel_in("foo", ["bar"]), "zone"),
                                    term(sel_in("service", ["securityscan"]), "zone")])),
             [node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
              node("nodeB", {"zoneLabel": "az2", "hostname": "h2"})],
             [], existing=[pod("p1", "nodeA", {"foo": "bar"})]),
        case(IPA, multi + "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
                          "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
             pod("p", affinity=affinity(anti=[term(sel_in("foo", ["abc"]), "region")])),
             [node("nodeA", {"region": "r1", "hostname": "nodeA"}),
              node("nodeB", {"region": "r1", "hostname": "nodeB"})],
             [], existing=[pod("e", "nodeA", {"foo": "abc"})]),
        case(IPA, multi + "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
                          "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but "
                          "can be scheduled onto nodeC",
             pod("p", affinity=affinity(anti=[term(sel_in("foo", ["abc"]), "region")])),
             [node("nodeA", china), node("nodeB", china_az), node("nodeC", india)], ["nodeC"],
             existing=[pod("e", "nodeA", {"foo": "abc"})]),
        case(IPA, multi + "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
                          "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but "
                          "can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity "
                          "rule but in different namespace)",
             pod("p", labels={"foo": "123"}, ns="NS1",
                 affinity=affinity(anti=[term(sel_in("foo", ["bar"]), "region")])),
             [node("nodeA", china), node("nodeB", china_az), node("nodeC", india)], ["nodeC"],
             existing=[pod("e1", "nodeA", {"foo": "bar"}, ns="NS1"),
                       pod("e2", "nodeC", ns="NS2", affinity=affinity(anti=[term(sel_in("foo", ["123"]), "region")]))]),
        case(IPA, multi + "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, "
                          "labelSelector of the term is firstly checked, and then topologyKey of the term is also "
                          "checked",
             pod("p", labels={"foo": ""}),
             [node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
              node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"})],
             ["nodeA", "nodeB"],
             existing=[pod("e", "nodeA", affinity=affinity(anti=[term(sel_exists("foo"), "invalid-node-label")]))]),
    ]


def ports(*specs: str) -> list[dict[str, Any]]:
    """Containers with host ports, each spec "PROTO/IP/PORT"."""
    out = []
    for s in specs:
        proto, ip, port = s.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "protocol": proto, "hostIP": ip})
    return [{"name": "c", "image": "pause", "ports": out}]


def port_cases() -> list[dict[str, Any]]:
    rows = [
        ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], True),
        ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
        ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
        ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], True),
        ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
        ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
        ("first tcp port conflict", ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
         ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"], False),
        ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], False),
        ("TCP hostPort conflict due to 0.0.0.0 hostIP", ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
         ["TCP/127.0.0.1/8001"], False),
        ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
        ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
        ("UDP hostPort conflict due to 0.0.0.0 hostIP", ["UDP/127.0.0.1/8001"],
         ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], False),
    ]
    out = [case(PORTS, f"TestNodePorts/{name}", pod("p", containers=ports(*mine)), [node("m1")],
                ["m1"] if fits else [], existing=[pod("e", "m1", containers=ports(*theirs))])
           for name, mine, theirs, fits in rows]
    init = {"name": "i", "image": "pause", "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}
    out.append(case(PORTS, "TestNodePorts/non-sidecar initContainer using hostPort", pod("p", initContainers=[init]),
                    [node("m1")], ["m1"], existing=[pod("e", "m1", containers=ports("TCP/0.0.0.0/8001"))]))
    out.append(case(PORTS, "TestNodePorts/TCP hostPort conflict from sidecar initContainer",
                    pod("p", initContainers=[{**init, "restartPolicy": "Always"}]),
                    [node("m1")], [], existing=[pod("e", "m1", containers=ports("TCP/0.0.0.0/8001"))]))
    return out


def req(cpu_m: int, mem: int, name: str = "c", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "pause", "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": str(mem)}},
            **extra}


def fit_cases() -> list[dict[str, Any]]:
    """TestEnoughRequests: node allocatable cpu 10m, memory 20, pods 32; one existing pod using (cpu, mem)."""
    small = {"cpu": "10m", "memory": "20", "pods": "32"}

    def fit(name: str, containers: list[dict[str, Any]], used: tuple[int, int], fits: bool,
            init: list[dict[str, Any]] | None = None, overhead: dict[str, str] | None = None,
            source: str = FIT, derived: bool = False, note: str = "") -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": containers}
        if init:
            spec["initContainers"] = init
        if overhead:
            spec["overhead"] = overhead
        return case(source, name, pod("p", **spec), [node("n1", alloc=small)], ["n1"] if fits else [],
                    existing=[pod("e", "n1", containers=[req(*used)])], derived=derived, note=note)

    helpers = "kubernetes/kubernetes staging/src/k8s.io/component-helpers/resource/helpers.go (PodRequests)"
    return [
        fit("TestEnoughRequests/too many resources fails", [req(1, 1)], (10, 20), False),
        fit("TestEnoughRequests/too many resources fails due to init container cpu", [req(1, 1)], (8, 19), False,
            init=[req(3, 1, "i")]),
        fit("TestEnoughRequests/too many resources fails due to highest init container cpu", [req(1, 1)], (8, 19),
            False, init=[req(3, 1, "i1"), req(2, 1, "i2")]),
        fit("TestEnoughRequests/too many resources fails due to init container memory", [req(1, 1)], (9, 19), False,
            init=[req(1, 3, "i")]),
        fit("TestEnoughRequests/init container fits because it's the max, not sum, of containers and init containers",
            [req(1, 1)], (9, 19), True, init=[req(1, 1, "i")]),
        fit("TestEnoughRequests/multiple init containers fit because it's the max, not sum, of containers and init "
            "containers", [req(1, 1)], (9, 19), True, init=[req(1, 1, "i1"), req(1, 1, "i2")]),
        fit("TestEnoughRequests/both resources fit", [req(1, 1)], (5, 5), True),
        fit("TestEnoughRequests/one resource memory fits", [req(2, 1)], (9, 5), False),
        fit("TestEnoughRequests/one resource cpu fits", [req(1, 2)], (5, 19), False),
        fit("TestEnoughRequests/equal edge case", [req(5, 1)], (5, 19), True),
        fit("TestEnoughRequests/equal edge case for init container", [req(4, 1)], (5, 19), True,
            init=[req(5, 1, "i")]),
        fit("TestEnoughRequests/resources + pod overhead fits", [req(1, 1)], (5, 5), True,
            overhead={"cpu": "3m", "memory": "13"}),
        fit("TestEnoughRequests/requests + overhead does not fit for memory", [req(1, 1)], (5, 5), False,
            overhead={"cpu": "1m", "memory": "15"}),
        fit("sidecar init containers add to the containers' requests", [req(3, 1)], (5, 5), False,
            init=[req(3, 1, "s", restartPolicy="Always")], source=helpers, derived=True,
            note="3m + 3m sidecar = 6m > 5m free; a plain init container of 3m would fit"),
        fit("a plain init container after a sidecar needs its own request plus the sidecars before it", [req(1, 1)],
            (5, 5), False, init=[req(2, 1, "s", restartPolicy="Always"), req(4, 1, "i")], source=helpers,
            derived=True, note="max(1m + 2m, 4m + 2m) = 6m > 5m free"),
        fit("a plain init container before a sidecar does not add the sidecar", [req(1, 1)], (5, 5), True,
            init=[req(5, 1, "i"), req(2, 1, "s", restartPolicy="Always")], source=helpers, derived=True,
            note="max(1m + 2m, 5m) = 5m fits 5m free"),
    ]


def pv(name: str, labels: dict[str, str] | None = None, node_terms: list[dict[str, Any]] | None = None,
       sc: str = "", capacity: str = "10Gi", phase: str = "Available") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": capacity}, "storageClassName": sc}
    if node_terms:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": node_terms}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec, "status": {"phase": phase}}


def pvc(name: str, volume: str = "", sc: str | None = None, storage: str = "1Gi") -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {"requests": {"storage": storage}}}
    if volume:
        spec["volumeName"] = volume
    if sc is not None:
        spec["storageClassName"] = sc
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": spec, "status": {"phase": "Bound" if volume else "Pending"}}


def storage_class(name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "",
                  topologies: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    sc: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                          "provisioner": provisioner, "volumeBindingMode": mode}
    if topologies:
        sc["allowedTopologies"] = topologies
    return sc


def with_claims(*claims: str) -> dict[str, Any]:
    return pod("p", volumes=[{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                             for i, c in enumerate(claims)])


def volume_zone_cases() -> list[dict[str, Any]]:
    pvs = [pv("Vol_1", {BETA_ZONE: "us-west1-a"}), pv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
           pv("Vol_Stable_1", {ZONE: "us-west1-a"}), pv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
           pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
           pv("Vol_Multi", {ZONE: "us-west1-c__us-west1-a"})]
    pvcs = [pvc("PVC_1", "Vol_1"), pvc("PVC_2", "Vol_2"), pvc("PVC_Stable_1", "Vol_Stable_1"),
            pvc("PVC_Stable_2", "Vol_Stable_2"), pvc("PVC_Stable_3", "Vol_Stable_3"), pvc("PVC_Multi", "Vol_Multi")]
    rows = [
        ("TestSingleZone/node without labels", "PVC_1", {}, True),
        ("TestSingleZone/beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, True),
        ("TestSingleZone/beta region label matched", "PVC_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, True),
        ("TestSingleZone/beta region label doesn't match", "PVC_2",
         {BETA_REGION: "no_us-west1", "uselessLabel": "none"}, False),
        ("TestSingleZone/beta zone label doesn't match", "PVC_1",
         {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}, False),
        ("TestSingleZone/zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, True),
        ("TestSingleZone/region label matched", "PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, True),
        ("TestSingleZone/region label doesn't match", "PVC_Stable_2",
         {REGION: "no_us-west1", "uselessLabel": "none"}, False),
        ("TestSingleZone/zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a", "uselessLabel": "none"},
         False),
        ("TestSingleZone/pv with zone and region, node with only zone", "PVC_Stable_3", {ZONE: "us-west1-a"}, False),
        ("TestSingleZone/pv with zone,node with beta zone", "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, False),
        ("TestSingleZone/pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, True),
        ("TestSingleZone/pv with beta label,node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, False),
        ("TestMultiZone/zone label matched", "PVC_Multi", {ZONE: "us-west1-a", "uselessLabel": "none"}, True),
    ]
    return [case(VZONE, name, with_claims(claim), [node("host1", labels)], ["host1"] if ok else [],
                 pvs=pvs, pvcs=pvcs) for name, claim, labels, ok in rows]


def volume_binding_cases() -> list[dict[str, Any]]:
    wait, imm = storage_class("wait-sc"), storage_class("immediate-sc", "Immediate")
    scs = [wait, imm]
    na = [node("node-a", {HOST: "node-a"})]
    host_a = [sel_in(HOST, ["node-a"])]
    host_b = [sel_in(HOST, ["node-b"])]
    three = [node(n, {HOST: n}) for n in ("node-a", "node-b", "node-c")]
    prov = "ebs.csi.aws.com"
    zonal = storage_class("gp3", provisioner=prov, topologies=[{"matchLabelExpressions": [
        {"key": ZONE, "values": ["us-west-2a"]}]}])
    zoned = [node("n-a", {ZONE: "us-west-2a", HOST: "n-a"}), node("n-b", {ZONE: "us-west-2b", HOST: "n-b"})]
    return [
        case(VBIND, "TestVolumeBinding/all bound", with_claims("pvc-a"), na, ["node-a"],
             pvs=[pv("pv-a", sc="wait-sc")], pvcs=[pvc("pvc-a", "pv-a", "wait-sc")], scs=scs),
        case(VBIND, "TestVolumeBinding/all bound with local volumes", with_claims("pvc-a", "pvc-b"),
             [*na, node("node-b", {HOST: "node-b"})], ["node-a"],
             pvs=[pv("pv-a", node_terms=host_a, sc="wait-sc", phase="Bound"),
                  pv("pv-b", node_terms=host_a, sc="wait-sc", phase="Bound")],
             pvcs=[pvc("pvc-a", "pv-a", "wait-sc"), pvc("pvc-b", "pv-b", "wait-sc")], scs=scs,
             note="node-b added: the bound PVs' node affinity (hostname node-a) rejects it"),
        case(VBIND, "TestVolumeBinding/PVC does not exist", with_claims("pvc-a"), na, [], scs=scs),
        case(VBIND, "TestVolumeBinding/immediate claims not bound", with_claims("pvc-a"), na, [],
             pvcs=[pvc("pvc-a", sc="immediate-sc")], scs=scs),
        case(VBIND, "TestVolumeBinding/unbound claims no matches", with_claims("pvc-a"), na, [],
             pvcs=[pvc("pvc-a", sc="wait-sc")], scs=scs,
             note="wait-sc has no provisioner, so only an existing PV could bind"),
        case(VBIND, "TestVolumeBinding/bound and unbound unsatisfied", with_claims("pvc-a", "pvc-b"),
             [node("node-a", {HOST: "node-a", "foo": "barbar"})], [],
             pvs=[pv("pv-a", node_terms=[sel_in("foo", ["bar"])], sc="wait-sc")],
             pvcs=[pvc("pvc-a", "pv-a", "wait-sc"), pvc("pvc-b", sc="wait-sc")], scs=scs),
        case(VBIND, "TestVolumeBinding/pv not found", with_claims("pvc-a"), na, [],
             pvcs=[pvc("pvc-a", "pv-a", "wait-sc")], scs=scs),
        case(VBIND, "TestVolumeBinding/local volumes with close capacity are preferred", with_claims("pvc-a"), three,
             ["node-a", "node-b"],
             pvs=[pv("pv-a-0", node_terms=host_a, sc="wait-sc", capacity="200Gi"),
                  pv("pv-a-1", node_terms=host_a, sc="wait-sc", capacity="200Gi"),
                  pv("pv-b-0", node_terms=host_b, sc="wait-sc", capacity="100Gi"),
                  pv("pv-b-1", node_terms=host_b, sc="wait-sc", capacity="100Gi")],
             pvcs=[pvc("pvc-a", sc="wait-sc", storage="50Gi")], scs=scs),
        case(K8S + "volumebinding/binder.go", "WaitForFirstConsumer claim provisions only where allowedTopologies "
                                              "allow (checkVolumeProvisions)", with_claims("data"), zoned, ["n-a"],
             pvcs=[pvc("data", sc="gp3")], scs=[zonal], derived=True),
        case(K8S + "volumebinding/binder.go", "WaitForFirstConsumer claim with a provisioner and no allowedTopologies "
                                              "fits every node", with_claims("data"), zoned, ["n-a", "n-b"],
             pvcs=[pvc("data", sc="gp3")], scs=[storage_class("gp3", provisioner=prov)], derived=True),
        case(K8S + "volumebinding/binder.go", "bound PV's zonal node affinity (an EBS volume) pins the pod's zone",
             with_claims("data"), zoned, ["n-b"],
             pvs=[pv("vol-1", node_terms=[sel_in(ZONE, ["us-west-2b"])], sc="gp3", phase="Bound")],
             pvcs=[pvc("data", "vol-1", "gp3")], scs=[zonal], derived=True),
    ]


def node_affinity_cases() -> list[dict[str, Any]]:
    """TestNodeAffinity (nodeaffinity plugin): required terms are ORed, expressions ANDed; nodeSelector ANDed."""
    n1 = [node("node1", {"kernel-version": "0206"})]
    return [
        case(NAFF, "TestNodeAffinity/missing labels", pod("p", nodeSelector={"foo": "bar"}), [node("node1")], []),
        case(NAFF, "TestNodeAffinity/same labels", pod("p", nodeSelector={"foo": "bar"}),
             [node("node1", {"foo": "bar"})], ["node1"]),
        case(NAFF, "TestNodeAffinity/node labels are superset", pod("p", nodeSelector={"foo": "bar"}),
             [node("node1", {"foo": "bar", "baz": "blah"})], ["node1"]),
        case(NAFF, "TestNodeAffinity/node labels are subset", pod("p", nodeSelector={"foo": "bar", "baz": "blah"}),
             [node("node1", {"foo": "bar"})], []),
        case(NAFF, "TestNodeAffinity/Pod with matchExpressions using Gt operator that matches the existing node",
             pod("p", affinity=affinity(node_terms=[sel_in("kernel-version", ["0204"], "Gt")])), n1, ["node1"]),
        case(NAFF, "TestNodeAffinity/Pod with matchExpressions using NotIn operator that matches the existing node",
             pod("p", affinity=affinity(node_terms=[sel_in("mem-type", ["DDR", "DDR2"], "NotIn")])),
             [node("node1", {"mem-type": "DDR3"})], ["node1"]),
        case(NAFF, "TestNodeAffinity/Pod with matchExpressions using Exists operator that matches the existing node",
             pod("p", affinity=affinity(node_terms=[sel_exists("GPU")])), [node("node1", {"GPU": "NVIDIA-GRID-K1"})],
             ["node1"]),
        case(NAFF, "TestNodeAffinity/Pod with affinity that don't match node's labels won't schedule onto the node",
             pod("p", affinity=affinity(node_terms=[sel_in("foo", ["value1", "value2"])])),
             [node("node1", {"foo": "bar"})], []),
        case(NAFF, "TestNodeAffinity/Pod with multiple matchExpressions ANDed that doesn't match the existing node",
             pod("p", affinity=affinity(node_terms=[{"matchExpressions": [
                 {"key": "GPU", "operator": "Exists"}, {"key": "GPU", "operator": "NotIn", "values": ["AMD", "INTER"]}
             ]}])), [node("node1", {"GPU": "AMD"})], []),
        case(NAFF, "TestNodeAffinity/Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels "
                   "and will schedule onto the node",
             pod("p", affinity=affinity(node_terms=[sel_in("foo", ["bar", "value2"]),
                                                    sel_in("diffkey", ["wrong", "value2"])])),
             [node("node1", {"foo": "bar"})], ["node1"]),
        case(NAFF, "TestNodeAffinity/Pod with empty MatchExpressions is not a valid value will match no objects and "
                   "won't schedule onto the node",
             pod("p", affinity=affinity(node_terms=[{"matchExpressions": []}])), [node("node1", {"foo": "bar"})], []),
        case(NAFF, "TestNodeAffinity/Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old "
                   "thing that we are deprecating) is not satisfied, won't schedule onto the node",
             pod("p", nodeSelector={"foo": "bar"}, affinity=affinity(node_terms=[sel_exists("foo")])),
             [node("node1", {"foo": "barrrrrr"})], []),
    ]


def main() -> None:
    cases = (spread_cases() + affinity_cases() + port_cases() + fit_cases() + volume_zone_cases()
             + volume_binding_cases() + node_affinity_cases())
    names = [(c["source"], c["name"]) for c in cases]
    assert len(names) == len(set(names)), "duplicate case"
    out = Path(__file__).with_name("kube_scheduler_cases.yaml")
    header = ("# Generated by make_kube_scheduler_cases.py (read its docstring): kube-scheduler plugin test cases as\n"
              "# plain Kubernetes objects, expect.feasibleNodes = the nodes the whole filter chain passes.\n")
    out.write_text(header + yaml.dump(cases, Dumper=_NoAliases, sort_keys=False, width=120))


class _NoAliases(yaml.SafeDumper):
    """Plain objects: no &id anchors where the generator shares a dict between cases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


if __name__ == "__main__":
    main()
