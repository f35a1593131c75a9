"""Pure launch shapes of an EC2NodeClass: disks, IMDS, user data per family, and what a missing setting says."""

from __future__ import annotations

import pytest

from api.ec2nodeclass import load_ec2nodeclass
from api.nodeclass_launch import ClusterInfo, NodeIdentity, block_device_mappings, metadata_options, user_data

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
