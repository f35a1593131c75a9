"""What a launched node registers with: its labels and taints, from its NodeClaim, as Karpenter's do.

Karpenter registers every node with the `karpenter.sh/unregistered:NoExecute` taint (kept until its registration
controller has synced the claim onto the Node, aws `pkg/providers/amifamily/resolver.go` registerWithTaints) and
with the claim's labels, which include its single-valued requirements (core `NodeClaimTemplate.ToNodeClaim`,
`Requirements.Labels()`), plus `karpenter.sh/capacity-type` and `karpenter.sh/do-not-sync-taints=true`
(aws `pkg/providers/launchtemplate/launchtemplate.go`: the kubelet registers the taints itself). Labels the kubelet
may not set on its own Node are left to the registration controller (docs/semantics.md §12, "Node registration").

`registration_labels` is the label set the Node ends with (the lifecycle controller's sync may use it);
`kubelet_labels` is the part the kubelet may send (user data's `--node-labels`); `registration_taints` its
`--register-with-taints`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api import labels as L

UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"
UNREGISTERED_TAINT: dict[str, str] = {"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}
DO_NOT_SYNC_TAINTS_LABEL = "karpenter.sh/do-not-sync-taints"
# Set by the kubelet itself or by the lifecycle controller, never sent from a claim at boot: a node that booted
# "registered" or "initialized" would skip the steps those labels record.
CONTROLLER_OWNED = frozenset({L.HOSTNAME_LABEL, L.REGISTERED_LABEL, L.INITIALIZED_LABEL})
# The NodeRestriction admission plugin lets a kubelet set, within the kubernetes.io and k8s.io domains, only these
# labels and those under the node.kubernetes.io / kubelet.kubernetes.io namespaces (kubernetes
# pkg/kubelet/apis/well_known_labels.go IsKubeletLabel; KEP-279). Anything else there gets the Node rejected.
RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io")
KUBELET_NAMESPACES = ("node.kubernetes.io", "kubelet.kubernetes.io")
KUBELET_SELF_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region"})


def label_domain(key: str) -> str:
    """The prefix before `/` (empty for an unprefixed key), as Karpenter's GetLabelDomain."""
    return key.split("/", 1)[0] if "/" in key else ""


def _in_domain(domain: str, parent: str) -> bool:
    return domain == parent or domain.endswith("." + parent)


def kubelet_may_set(key: str) -> bool:
    """Whether the NodeRestriction admission lets a kubelet register its Node with this label."""
    domain = label_domain(key)
    if not any(_in_domain(domain, d) for d in RESTRICTED_DOMAINS):
        return True
    return key in KUBELET_SELF_LABELS or any(_in_domain(domain, ns) for ns in KUBELET_NAMESPACES)


def single_valued(requirements: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The requirements with operator `In` and exactly one value, as labels (what the node will carry)."""
    out: dict[str, str] = {}
    for req in requirements:
        values = list(req.get("values") or ())
        if req.get("operator") == "In" and len(values) == 1 and req.get("key"):
            out[str(req["key"])] = str(values[0])
    return out


def registration_labels(claim: Mapping[str, Any]) -> dict[str, str]:
    """The labels the claim's Node registers with: its single-valued requirements, overridden by the claim's own
    labels (capacity type, instance type, zone, NodePool, the template's labels), less those the kubelet or the
    lifecycle controller set (hostname, registered, initialized)."""
    meta, spec = claim.get("metadata") or {}, claim.get("spec") or {}
    labels = {**single_valued(spec.get("requirements") or ()), **(meta.get("labels") or {})}
    return {k: str(v) for k, v in labels.items() if k not in CONTROLLER_OWNED}


def kubelet_labels(claim: Mapping[str, Any], sync_taints_in_kubelet: bool = True) -> dict[str, str]:
    """`registration_labels` the kubelet may set itself (its `--node-labels`), with
    `karpenter.sh/do-not-sync-taints=true` when the kubelet registers the taints too (every family but Custom)."""
    labels = {k: v for k, v in registration_labels(claim).items() if kubelet_may_set(k)}
    if sync_taints_in_kubelet:
        labels[DO_NOT_SYNC_TAINTS_LABEL] = "true"
    return labels


def registration_taints(claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The claim's taints and startup taints (first of each key and effect), then `karpenter.sh/unregistered:
    NoExecute` unless one is already there."""
    spec = claim.get("spec") or {}
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, Any]] = set()
    for taint in [*(spec.get("taints") or ()), *(spec.get("startupTaints") or ())]:
        key = (taint.get("key"), taint.get("effect"))
        if key not in seen:
            seen.add(key)
            out.append(dict(taint))
    if (UNREGISTERED_TAINT["key"], UNREGISTERED_TAINT["effect"]) not in seen:
        out.append(dict(UNREGISTERED_TAINT))
    return out
