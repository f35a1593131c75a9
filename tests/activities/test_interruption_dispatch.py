"""The dispatcher's pure parts: instance -> Node/NodeClaim index, and the spot replacement it asks for."""

from __future__ import annotations

from api import labels
from api.catalog import load_default_catalog
from runtime.interruption import index_nodes, spot_replacement


def node(name: str, uid: str, instance: str, **extra_labels: str) -> dict:
    node_labels = {labels.NODEPOOL_LABEL: "spot", labels.INSTANCE_TYPE_LABEL: "m5.large",
                   labels.CAPACITY_TYPE_LABEL: "spot", labels.ARCH_LABEL: "amd64", **extra_labels}
    return {"metadata": {"name": name, "uid": uid, "labels": node_labels},
            "spec": {"providerID": f"aws:///us-east-1a/{instance}"}}


def claim(name: str, uid: str, instance: str, node_name: str | None = None) -> dict:
    status = {"providerID": f"aws:///us-east-1a/{instance}"}
    if node_name:
        status["nodeName"] = node_name
    return {"metadata": {"name": name, "uid": uid, "labels": {labels.NODEPOOL_LABEL: "spot",
                                                              labels.INSTANCE_TYPE_LABEL: "c5.large"}},
            "status": status}


def test_index_maps_instances_to_nodes_and_their_claims() -> None:
    index = index_nodes([node("n1", "u1", "i-01"), node("n2", "u2", "i-02"), {"metadata": {"name": "kind"}}],
                        [claim("c1", "cu1", "i-01", "n1"), claim("c2", "cu2", "i-02")])
    assert set(index) == {"i-01", "i-02"}
    assert (index["i-01"].name, index["i-01"].uid, index["i-01"].node_claim) == ("n1", "u1", "c1")
    assert index["i-02"].node_claim == "c2"  # matched by providerID when the claim names no node
    assert index["i-01"].capacity_type == "spot" and index["i-01"].node_pool == "spot"


def test_a_claim_that_never_registered_is_indexed_by_its_own_uid() -> None:
    index = index_nodes([], [claim("c9", "cu9", "i-09")])
    info = index["i-09"]
    assert (info.name, info.uid, info.node_claim, info.instance_type) == ("", "cu9", "c9", "c5.large")


def test_spot_replacement_is_at_least_as_large_cheapest_first_and_not_the_reclaimed_type() -> None:
    catalog = load_default_catalog()
    info = index_nodes([node("n1", "u1", "i-01")], [])["i-01"]
    r = spot_replacement(info, catalog, {"spec": {"template": {"spec": {"requirements": []}}}})
    assert r is not None and r.capacity_type == "spot"
    assert "m5.large" not in r.instance_types and 0 < len(r.instance_types) <= 15
    current = catalog.get("m5.large")
    prices = []
    for name in r.instance_types:
        it = catalog.get(name)
        assert it.cpu_cores >= current.cpu_cores and it.memory_bytes >= current.memory_bytes
        prices.append(it.cheapest(None, {"spot"}).price)
    assert prices == sorted(prices) and r.price == prices[0]


def test_spot_replacement_honours_the_nodepool_requirements() -> None:
    catalog = load_default_catalog()
    info = index_nodes([node("n1", "u1", "i-01")], [])["i-01"]
    pool = {"spec": {"template": {"spec": {"requirements": [
        {"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "m5.xlarge", "t3.nano"]},
    ]}}}}
    r = spot_replacement(info, catalog, pool)
    assert r is not None
    assert r.capacity_type == "on-demand" and r.instance_types == ["m5.xlarge"]


def test_spot_replacement_honours_requirements_on_well_known_labels() -> None:
    """A pool allowing only generation > 5 of category m or c: the replacement offers only such types."""
    catalog = load_default_catalog()
    info = index_nodes([node("n1", "u1", "i-01")], [])["i-01"]
    pool = {"spec": {"template": {"spec": {"requirements": [
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["m", "c"]},
    ]}}}}
    r = spot_replacement(info, catalog, pool)
    assert r is not None and r.instance_types
    for name in r.instance_types:
        labels_of = catalog.get(name).labels
        assert int(labels_of["karpenter.k8s.aws/instance-generation"]) > 5
        assert labels_of["karpenter.k8s.aws/instance-category"] in ("m", "c")


def test_no_replacement_for_an_unknown_instance_type() -> None:
    info = index_nodes([node("n1", "u1", "i-01", **{labels.INSTANCE_TYPE_LABEL: "x9.huge"})], [])["i-01"]
    assert spot_replacement(info, load_default_catalog(), None) is None
