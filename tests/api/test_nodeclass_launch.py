"""Pure launch shapes of an EC2NodeClass: disks, IMDS, user data per family, and what a missing setting says."""

from __future__ import annotations

import pytest

from api.ec2nodeclass import load_ec2nodeclass
from api.node_registration import kubelet_may_set, registration_labels, registration_taints
from api.nodeclass_launch import (
    ClusterInfo,
    NodeIdentity,
    block_device_mappings,
    metadata_options,
    node_identity,
    user_data,
)

CLUSTER = ClusterInfo("demo", "https://api.example", "Q0E=")
NODE = NodeIdentity(labels={"karpenter.sh/nodepool": "web"}, taints=[{"key": "gpu", "effect": "NoSchedule"}])


def _nc(**spec: object):
    return load_ec2nodeclass({"metadata": {"name": "c"}, "spec": {"amiSelectorTerms": [{"id": "ami-1"}], **spec}})


def test_disks_are_in_gib_and_default_per_family() -> None:
    nc = _nc(amiFamily="AL2023", blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {
        "volumeSize": "100G", "volumeType": "gp3", "iops": 3000, "encrypted": True}}])
    assert block_device_mappings(nc) == [{"DeviceName": "/dev/xvda", "Ebs": {
        "Encrypted": True, "Iops": 3000, "VolumeType": "gp3", "VolumeSize": 94}}]  # 100 GB = 93.1 GiB, rounded up
    assert [d["DeviceName"] for d in block_device_mappings(_nc(amiFamily="Bottlerocket"))] == ["/dev/xvda",
                                                                                               "/dev/xvdb"]
    assert block_device_mappings(_nc(amiFamily="AL2"))[0]["Ebs"]["VolumeSize"] == 20


def test_imds_defaults_to_v2_with_one_hop() -> None:
    assert metadata_options(_nc(amiFamily="AL2023")) == {"HttpEndpoint": "enabled", "HttpProtocolIpv6": "disabled",
                                                         "HttpPutResponseHopLimit": 1, "HttpTokens": "required"}
    assert metadata_options(_nc(amiFamily="AL2023", metadataOptions={"httpPutResponseHopLimit": 2}))[
        "HttpPutResponseHopLimit"] == 2


def test_user_data_per_family() -> None:
    al2 = user_data(_nc(amiFamily="AL2", kubelet={"maxPods": 30}), CLUSTER, NODE)
    assert "/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint 'https://api.example' --b64-cluster-ca 'Q0E='" in al2
    assert "--register-with-taints=gpu:NoSchedule" in al2 and "--max-pods=30" in al2
    br = user_data(_nc(amiFamily="Bottlerocket"), CLUSTER, NODE)
    assert 'cluster-name = "demo"' in br and '"gpu" = [":NoSchedule"]' in br and '"karpenter.sh/nodepool" = "web"' in br
    custom_script = "#!/bin/bash\necho hi\n"
    assert user_data(_nc(amiFamily="Custom", userData=custom_script), CLUSTER, NODE) == custom_script
    merged = user_data(_nc(amiFamily="AL2023", userData=custom_script), CLUSTER, NODE)
    assert merged.index("echo hi") < merged.index("kind: NodeConfig")  # the class's part runs first


def test_missing_cluster_settings_are_named() -> None:
    with pytest.raises(ValueError, match="endpoint, ca"):
        user_data(_nc(amiFamily="AL2023"), ClusterInfo("demo", "", ""), NODE)


# -- registration: what the kubelet registers the Node with ---------------------------------------

CLAIM = {
    "metadata": {"name": "web-abc", "labels": {
        "karpenter.sh/nodepool": "web", "karpenter.k8s.aws/ec2nodeclass": "c", "team": "payments",
        "node-role.kubernetes.io/worker": "",  # a kubernetes.io label the kubelet may not set itself
        "node-restriction.kubernetes.io/pci": "true", "example.k8s.io/tier": "gold",
        "karpenter.sh/initialized": "true", "kubernetes.io/hostname": "stale"}},
    "spec": {"requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
        {"key": "example.com/rack", "operator": "In", "values": ["r7"]},
        {"key": "example.com/any", "operator": "In", "values": ["a", "b"]},
        {"key": "example.com/not", "operator": "NotIn", "values": ["x"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6g.large", "m6g.xlarge"]}],
        "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "example.com/agent-not-ready", "effect": "NoExecute"}]},
}
WANT_LABELS = {"karpenter.sh/nodepool": "web", "karpenter.k8s.aws/ec2nodeclass": "c", "team": "payments",
               "karpenter.sh/capacity-type": "spot", "kubernetes.io/arch": "arm64", "example.com/rack": "r7",
               "node.kubernetes.io/instance-type": "m6g.xlarge", "topology.kubernetes.io/zone": "us-east-1b",
               "karpenter.sh/do-not-sync-taints": "true"}
WANT_TAINTS = "dedicated=web:NoSchedule,example.com/agent-not-ready:NoExecute,karpenter.sh/unregistered:NoExecute"


def _boot(family: str) -> str:
    return user_data(_nc(amiFamily=family), CLUSTER, node_identity(CLAIM, family, "m6g.xlarge", "us-east-1b"))


def _flag(text: str, name: str) -> str:
    return next(part.split("=", 1)[1] for part in text.replace("'", " ").split() if part.startswith(f"--{name}="))


def test_al2023_and_al2_register_with_the_unregistered_taint_and_the_claims_labels() -> None:
    for family in ("AL2023", "AL2"):
        text = _boot(family)
        labels = dict(item.split("=", 1) for item in _flag(text, "node-labels").split(","))
        assert labels == WANT_LABELS, family
        assert _flag(text, "register-with-taints") == WANT_TAINTS, family


def test_bottlerocket_registers_with_the_taint_and_the_labels() -> None:
    text = _boot("Bottlerocket")
    assert '"karpenter.sh/unregistered" = [":NoExecute"]' in text and '"dedicated" = ["web:NoSchedule"]' in text
    for key, value in WANT_LABELS.items():
        assert f'"{key}" = "{value}"' in text
    assert "node-role.kubernetes.io" not in text and "karpenter.sh/initialized" not in text


def test_the_kubelet_sends_only_labels_the_node_restriction_admission_allows() -> None:
    allowed = ["team", "karpenter.sh/nodepool", "node.kubernetes.io/instance-type", "kubernetes.io/arch",
               "topology.kubernetes.io/zone", "kubelet.kubernetes.io/x", "sub.node.kubernetes.io/y"]
    refused = ["node-role.kubernetes.io/worker", "node-restriction.kubernetes.io/pci", "example.k8s.io/tier",
               "kubernetes.io/role", "topology.kubernetes.io/rack"]
    assert all(kubelet_may_set(k) for k in allowed)
    assert not any(kubelet_may_set(k) for k in refused)
    assert kubelet_may_set("notkubernetes.io/x")  # a look-alike domain is not a subdomain


def test_registration_labels_keep_what_the_kubelet_may_not_set_for_the_controller_to_sync() -> None:
    labels = registration_labels(CLAIM)
    assert labels["node-role.kubernetes.io/worker"] == "" and labels["example.k8s.io/tier"] == "gold"
    assert "karpenter.sh/initialized" not in labels and "kubernetes.io/hostname" not in labels
    assert "example.com/any" not in labels and "example.com/not" not in labels  # not single-valued In


def test_the_unregistered_taint_is_not_doubled_and_custom_keeps_taint_sync() -> None:
    claim = {"metadata": {}, "spec": {"taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]}}
    assert registration_taints(claim) == [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]
    assert "karpenter.sh/do-not-sync-taints" not in node_identity(CLAIM, "Custom", "m6g.xlarge", "us-east-1b").labels
