"""Which launch templates are nodeflow's, which a deleted EC2NodeClass owns, which are leaked (api/launch_templates.py,
devstack/audit.py), and the NodeClaims a deleted class waits for (api/ec2nodeclass.py)."""

from __future__ import annotations

from typing import Any

from api.ec2nodeclass import claims_of_class
from api.events import waiting_on_nodeclaims
from api.launch_templates import class_filters, is_ours, leaked, of_class
from devstack.audit import leaked_launch_templates


def _template(name: str, node_class: str | None = "nodes", cluster: str | None = "prod") -> dict[str, Any]:
    tags = {"karpenter.k8s.aws/ec2nodeclass": node_class, "eks:eks-cluster-name": cluster}
    return {"LaunchTemplateName": name, "LaunchTemplateId": f"lt-{name[-3:]}",
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items() if v is not None]}


TEMPLATES = [
    _template("nodeflow.dev/aaa"),
    _template("nodeflow.dev/bbb", node_class="gpu"),
    _template("nodeflow.dev/ccc", node_class="gone"),
    _template("nodeflow.dev/ddd", cluster="staging"),  # another cluster's
    _template("nodeflow.dev/eee", node_class=None),  # no class tag: not ours to delete
    _template("karpenter.k8s.aws/fff"),  # Karpenter's own, beside nodeflow
    _template("nodeflow.dev/ggg", cluster=None),  # made without a cluster name
]


def test_ours_needs_the_prefix_a_class_tag_and_this_clusters_tag() -> None:
    assert [t["LaunchTemplateName"] for t in TEMPLATES if is_ours(t, "prod")] == [
        "nodeflow.dev/aaa", "nodeflow.dev/bbb", "nodeflow.dev/ccc"]
    assert [t["LaunchTemplateName"] for t in TEMPLATES if is_ours(t, "")] == ["nodeflow.dev/ggg"]


def test_a_class_owns_its_tagged_templates_in_its_cluster_only() -> None:
    assert [t["LaunchTemplateName"] for t in of_class(TEMPLATES, "prod", "nodes")] == ["nodeflow.dev/aaa"]
    assert [t["LaunchTemplateName"] for t in of_class(TEMPLATES, "staging", "nodes")] == ["nodeflow.dev/ddd"]
    assert of_class(TEMPLATES, "prod", "absent") == []
    assert class_filters("prod", "nodes") == [{"Name": "tag:karpenter.k8s.aws/ec2nodeclass", "Values": ["nodes"]},
                                              {"Name": "tag:eks:eks-cluster-name", "Values": ["prod"]}]
    assert class_filters("", "nodes") == [{"Name": "tag:karpenter.k8s.aws/ec2nodeclass", "Values": ["nodes"]}]


def test_leaked_counts_our_templates_whose_class_is_gone() -> None:
    assert leaked(TEMPLATES, "prod", ["nodes", "gpu"]) == ["nodeflow.dev/ccc"]
    assert leaked(TEMPLATES, "prod", ["nodes", "gpu", "gone"]) == []
    assert leaked(TEMPLATES, "prod", []) == ["nodeflow.dev/aaa", "nodeflow.dev/bbb", "nodeflow.dev/ccc"]
    assert leaked(TEMPLATES, "staging", []) == ["nodeflow.dev/ddd"]
    assert leaked([], "prod", []) == []


def test_the_audit_reads_class_objects() -> None:
    classes = [{"metadata": {"name": "nodes"}},
               {"metadata": {"name": "gpu", "deletionTimestamp": "2026-11-29T08:00:00Z"}}]
    assert leaked_launch_templates(TEMPLATES, classes, "prod") == ["nodeflow.dev/ccc"]  # deleting is not gone yet
    assert leaked_launch_templates(TEMPLATES, classes[:1], "prod") == ["nodeflow.dev/bbb", "nodeflow.dev/ccc"]


def test_a_class_waits_for_the_claims_that_reference_it() -> None:
    def claim(name: str, ref: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {"nodeClassRef": ref}}

    claims = [claim("b", {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "nodes"}),
              claim("a", {"name": "nodes"}),
              claim("c", {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}),
              claim("d", {"group": "example.com", "kind": "OtherClass", "name": "nodes"}),
              {"metadata": {"name": "e"}, "spec": {}}]
    assert claims_of_class(claims, "nodes") == ["a", "b"]
    assert claims_of_class(claims, "absent") == []


def test_the_waiting_message_names_five_claims_then_counts() -> None:
    assert waiting_on_nodeclaims(["a"]) == "Waiting on NodeClaim termination for a"
    assert waiting_on_nodeclaims([f"n{i}" for i in range(7)]) == \
        "Waiting on NodeClaim termination for n0, n1, n2, n3, n4 and 2 other(s)"
