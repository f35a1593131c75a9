"""Where launched replacements stand: gone, registered, Ready and initialized.

A disruption waits on one or two replacements and reads each (a GET of its NodeClaim and Node); a provisioning batch
waits on up to a thousand, where those reads were 2,000-3,000 requests a poll (and a LIST of every Node for each
claim not yet registered), so one poll outlasted its activity's timeout. Above `READ_EACH_UP_TO` replacements the
poll reads two LISTs and matches locally, by the same rules.
"""

from __future__ import annotations

from collections.abc import Iterable

from api import labels
from api.labels import NODECLAIM_TAG
from api.provider_id import instance_id_from_provider_id
from contracts.disruption import LaunchedReplacement, ReplacementStatus
from gateways.kube import KubeClient, Obj, node_ready

READ_EACH_UP_TO = 16  # a GET or two per replacement below this; two LISTs above


class NodeIndex:
    """Nodes by name, by their NodeClaim label and by the instance id ending their providerID."""

    def __init__(self, nodes: Iterable[Obj]) -> None:
        self.by_name: dict[str, Obj] = {}
        self.by_claim: dict[str, Obj] = {}
        self.by_instance: dict[str, Obj] = {}
        for node in nodes:
            meta = node.get("metadata") or {}
            self.by_name[meta.get("name") or ""] = node
            claim = (meta.get("labels") or {}).get(NODECLAIM_TAG)
            if claim:
                self.by_claim.setdefault(claim, node)
            instance = instance_id_from_provider_id((node.get("spec") or {}).get("providerID"))
            if instance:
                self.by_instance.setdefault(instance, node)

    def find(self, claim: Obj, r: LaunchedReplacement) -> Obj | None:
        """The claim's Node: by `status.nodeName`, else by the claim label, else by the instance's providerID."""
        node = self.by_name.get((claim.get("status") or {}).get("nodeName") or "")
        if node is None:
            node = self.by_claim.get(r.node_claim)
        if node is None and r.instance_id:
            node = self.by_instance.get(r.instance_id)
        return node


def status_of(r: LaunchedReplacement, claim: Obj | None, node: Obj | None) -> ReplacementStatus:
    """Gone when the claim is missing or deleting; Ready only when its Node is Ready and initialized (the lifecycle
    controller's karpenter.sh/initialized), as Karpenter's disruption waits on Initialized: a Ready node may still
    carry startup or ephemeral taints (docs/decisions.md §19)."""
    if claim is None or _deleting(claim):
        return ReplacementStatus(node_claim=r.node_claim, gone=True)
    if node is None:
        return ReplacementStatus(node_claim=r.node_claim)
    initialized = (node["metadata"].get("labels") or {}).get(labels.INITIALIZED_LABEL) == "true"
    return ReplacementStatus(node_claim=r.node_claim, node=node["metadata"]["name"],
                             ready=node_ready(node) and initialized)


def find_node(kube: KubeClient, claim: Obj, r: LaunchedReplacement) -> Obj | None:
    """One claim's Node read from the API: by `status.nodeName`, else by the claim label, else by providerID."""
    node = kube.get_node((claim.get("status") or {}).get("nodeName") or "")
    if node is not None:
        return node
    nodes = kube.list_nodes(label_selector=f"{NODECLAIM_TAG}={r.node_claim}")
    if not nodes and r.instance_id:
        return NodeIndex(kube.list_nodes()).by_instance.get(r.instance_id)
    return nodes[0] if nodes else None


def read_statuses(kube: KubeClient, replacements: list[LaunchedReplacement]) -> list[ReplacementStatus]:
    """Each replacement's status, in order: a GET or two each for a few, two LISTs for many."""
    if len(replacements) <= READ_EACH_UP_TO:
        out = []
        for r in replacements:
            claim = kube.get_node_claim(r.node_claim)
            out.append(status_of(r, claim, None if claim is None or _deleting(claim) else find_node(kube, claim, r)))
        return out
    claims = {(c.get("metadata") or {}).get("name"): c for c in kube.list_node_claims()}
    nodes = NodeIndex(kube.list_nodes())
    return [status_of(r, claims.get(r.node_claim), nodes.find(claims[r.node_claim], r)
                      if r.node_claim in claims else None) for r in replacements]


def _deleting(claim: Obj) -> bool:
    return bool((claim.get("metadata") or {}).get("deletionTimestamp"))
