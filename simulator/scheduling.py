"""Whether a pod may run on a node: taints and tolerations, nodeSelector, required node affinity, cordon.

The simulator's scheduler and DaemonSet controller share these rules, which mirror kube-scheduler's
NodeUnschedulable, TaintToleration and NodeAffinity filter plugins (and component-helpers' nodeaffinity matching:
terms are ORed, an empty term matches no node, NotIn and DoesNotExist match a node without the label, Gt / Lt
need an integer label value; matchFields know only `metadata.name`).
"""

from __future__ import annotations

from typing import Any

from simulator.pods import labels


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for t in tolerations:
        effect = t.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        key = t.get("key")
        if not key:
            if op == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if op == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def untolerated_taint(pod_spec: dict[str, Any], node: dict[str, Any]) -> dict[str, Any] | None:
    """The first NoSchedule / NoExecute taint the pod does not tolerate (TaintToleration's filter), or None."""
    tolerations = pod_spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not tolerates(tolerations, taint):
            return taint
    return None


def taints_tolerated(pod_spec: dict[str, Any], node: dict[str, Any]) -> bool:
    return untolerated_taint(pod_spec, node) is None


def match_node_expression(expr: dict[str, Any], node_labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    value = node_labels.get(key)
    if op == "In":
        return value in values
    if op == "NotIn":
        return value not in values
    if op == "Exists":
        return key in node_labels
    if op == "DoesNotExist":
        return key not in node_labels
    if op in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        try:
            lhs, rhs = int(value), int(values[0])
        except ValueError:
            return False
        return lhs > rhs if op == "Gt" else lhs < rhs
    return False


def node_affinity_matches(pod_spec: dict[str, Any], node: dict[str, Any]) -> bool:
    node_labels = labels(node)
    for k, v in (pod_spec.get("nodeSelector") or {}).items():
        if node_labels.get(k) != v:
            return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        name = (node.get("metadata") or {}).get("name")
        if not exprs and not fields:
            continue  # an empty term matches no node
        if all(match_node_expression(e, node_labels) for e in exprs) and all(
                f.get("key") == "metadata.name" and f.get("operator") in ("In", "NotIn")
                and match_node_expression(f, {"metadata.name": name}) for f in fields):
            return True
    return False


def schedulable_on(pod_spec: dict[str, Any], node: dict[str, Any], ignore_unschedulable: bool = False) -> bool:
    """Filters except resources: cordon, taints, selectors and affinity (cheap checks first: runs per node)."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable") and not ignore_unschedulable and not tolerates(
            pod_spec.get("tolerations") or [],
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}):
        return False
    if spec.get("taints") and not taints_tolerated(pod_spec, node):
        return False
    if not pod_spec.get("nodeSelector") and not pod_spec.get("affinity"):
        return True
    return node_affinity_matches(pod_spec, node)


# Tolerations the DaemonSet controller adds to every daemon pod (kubernetes/pkg/controller/daemon/util).
DAEMONSET_TOLERATIONS: list[dict[str, Any]] = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
