"""Reading launched replacements' status (activities/replacement_status.py) over HTTP against the simulator: a
provisioning batch's thousand replacements are read with two LISTs instead of a GET or two each, and both ways
answer alike for every case: Ready and initialized, found by the claim label or the providerID, not yet
registered, deleting, gone."""

from __future__ import annotations

from typing import Any

from activities.replacement_status import READ_EACH_UP_TO, read_statuses
from api import labels as L
from bench.clusters import node_objects
from contracts.disruption import LaunchedReplacement, ReplacementStatus
from gateways.kube import KubeClient
from simulator.server import Simulator


class CountingKube(KubeClient):
    """The gateway over the simulator, recording each read."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.calls: list[str] = []

    def get_node(self, name: str) -> Any:
        if name:  # the gateway sends no request for a claim that names no Node
            self.calls.append("GET Node")
        return super().get_node(name)

    def get_node_claim(self, name: str) -> Any:
        self.calls.append("GET NodeClaim")
        return super().get_node_claim(name)

    def list_nodes(self, label_selector: str | None = None) -> Any:
        self.calls.append("LIST Nodes" + (" by label" if label_selector else ""))
        return super().list_nodes(label_selector)

    def list_node_claims(self, label_selector: str | None = None) -> Any:
        self.calls.append("LIST NodeClaims")
        return super().list_node_claims(label_selector)


def _case(kind: str, i: int) -> tuple[list[dict[str, Any]], LaunchedReplacement, ReplacementStatus]:
    """One replacement of `kind`, the objects the cluster holds for it, and the status it must read as."""
    name = f"{kind}-{i}"
    claim, node = node_objects(name, "m5.large")
    instance = node["spec"]["providerID"].rsplit("/", 1)[1]
    r = LaunchedReplacement(node_claim=claim["metadata"]["name"], uid=claim["metadata"]["uid"], instance_id=instance)
    if kind == "ready":
        return [claim, node], r, ReplacementStatus(node_claim=r.node_claim, node=name, ready=True)
    if kind in ("by-label", "by-provider"):  # registered, its claim not yet told the Node's name
        del claim["status"]["nodeName"]
        del node["metadata"]["labels"][L.INITIALIZED_LABEL]  # Ready, not yet initialized: not Ready to a waiter
        if kind == "by-label":
            node["metadata"]["labels"][L.NODECLAIM_TAG] = r.node_claim
        return [claim, node], r, ReplacementStatus(node_claim=r.node_claim, node=name)
    if kind == "unregistered":
        del claim["status"]["nodeName"]
        return [claim], r, ReplacementStatus(node_claim=r.node_claim)
    if kind == "deleting":
        claim["metadata"]["finalizers"] = [L.TERMINATION_FINALIZER]
        return [claim, node], r, ReplacementStatus(node_claim=r.node_claim, gone=True)
    return [], r, ReplacementStatus(node_claim=r.node_claim, gone=True)  # "missing": the claim is gone


KINDS = ("ready", "by-label", "by-provider", "unregistered", "deleting", "missing")


def test_many_replacements_are_read_with_two_lists_and_each_reads_as_it_does_alone(sim: Simulator) -> None:
    cases = [_case(kind, i) for i in range(3) for kind in KINDS]
    assert len(cases) > READ_EACH_UP_TO
    sim.load_objects([o for objs, _, _ in cases for o in objs])
    kube = CountingKube(sim.api_client())
    for _, r, _ in cases:
        if r.node_claim.startswith("deleting"):
            kube.delete_node_claim_answer(r.node_claim)
    replacements, expected = [r for _, r, _ in cases], [want for _, _, want in cases]
    kube.calls.clear()
    assert read_statuses(kube, replacements) == expected
    assert sorted(kube.calls) == ["LIST NodeClaims", "LIST Nodes"]
    kube.calls.clear()
    assert [read_statuses(kube, [r])[0] for r in replacements] == expected  # each alone, with GETs
    assert "LIST NodeClaims" not in kube.calls and kube.calls.count("GET NodeClaim") == len(replacements)


def test_a_few_replacements_are_read_one_by_one(sim: Simulator) -> None:
    cases = [_case("ready", 0), _case("unregistered", 0)]
    sim.load_objects([o for objs, _, _ in cases for o in objs])
    kube = CountingKube(sim.api_client())
    assert read_statuses(kube, [r for _, r, _ in cases]) == [want for _, _, want in cases]
    # the ready one: its claim and its Node by name; the unregistered one: its claim, a LIST by label, a LIST of all
    assert kube.calls == ["GET NodeClaim", "GET Node", "GET NodeClaim", "LIST Nodes by label", "LIST Nodes"]
