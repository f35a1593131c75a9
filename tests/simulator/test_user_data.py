"""The simulated node's reading of its user data (simulator/user_data.py) and which cluster it names
(simulator/membership.py): hand-written documents in each EKS AMI format, and what nodeflow's launch sends."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from api.ec2nodeclass import EC2NodeClass
from api.nodeclass_launch import ClusterInfo, NodeIdentity, user_data
from simulator.membership import ClusterIdentity, same_endpoint
from simulator.user_data import Flavor, decode, parse, parse_taint

NODEADM_MIME = """\
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo custom
--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: prod
    apiServerEndpoint: https://ABC.gr7.us-east-1.eks.amazonaws.com
    certificateAuthority: Q0E=
    cidr: 10.100.0.0/16
  kubelet:
    config:
      maxPods: 58
      kubeReserved: {cpu: 100m}
      registerWithTaints:
      - {key: karpenter.sh/unregistered, effect: NoExecute}
    flags:
    - --node-labels=karpenter.sh/nodepool=default,team=ml
    - --register-with-taints=dedicated=gpu:NoSchedule
--//--
"""

AL2_SCRIPT = """\
#!/bin/bash -xe
exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1
/etc/eks/bootstrap.sh 'prod' --apiserver-endpoint 'https://abc.example' --b64-cluster-ca 'Q0E=' \
--use-max-pods false --kubelet-extra-args '--node-labels=a=1,b=2 --register-with-taints=t:NoExecute --max-pods=20'
"""

BOTTLEROCKET = """\
[settings.kubernetes]
cluster-name = "prod"
api-server = "https://abc.example"
cluster-certificate = "Q0E="
max-pods = 42
[settings.kubernetes.node-labels]
"karpenter.sh/nodepool" = "default"
[settings.kubernetes.node-taints]
"dedicated" = ["gpu:NoSchedule", ":NoExecute"]
[settings.kubernetes.kube-reserved]
memory = "500Mi"
"""


def test_nodeadm_mime_gives_cluster_labels_taints_and_kubelet_config() -> None:
    boot = parse(decode(base64.b64encode(NODEADM_MIME.encode()).decode()))
    assert boot is not None and boot.flavor is Flavor.NODEADM
    assert boot.cluster_name == "prod" and boot.api_server == "https://ABC.gr7.us-east-1.eks.amazonaws.com"
    assert boot.labels == {"karpenter.sh/nodepool": "default", "team": "ml"}
    assert boot.taints == [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
                           {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    assert boot.kubelet["maxPods"] == 58 and boot.kubelet["kubeReserved"] == {"cpu": "100m"}


def test_several_node_configs_merge_in_order() -> None:
    second = ("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n"
              "      kubeReserved: {memory: 1Gi}\n    flags: [--max-pods=12]\n")
    doc = NODEADM_MIME.replace("--//--", f"--//\nContent-Type: application/node.eks.aws\n\n{second}--//--")
    boot = parse(doc)
    assert boot is not None and boot.cluster_name == "prod"
    assert boot.kubelet["kubeReserved"] == {"cpu": "100m", "memory": "1Gi"}
    assert boot.kubelet["maxPods"] == 12, "a kubelet flag wins over the config file"


def test_al2_bootstrap_sh() -> None:
    boot = parse(AL2_SCRIPT)
    assert boot is not None and boot.flavor is Flavor.BOOTSTRAP_SH
    assert (boot.cluster_name, boot.api_server) == ("prod", "https://abc.example")
    assert boot.labels == {"a": "1", "b": "2"} and boot.taints == [{"key": "t", "effect": "NoExecute"}]
    assert boot.kubelet == {"maxPods": 20}
    plain = parse("#!/bin/bash\n/etc/eks/bootstrap.sh prod --use-max-pods false\n")
    assert plain is not None and plain.kubelet == {"maxPods": 110}, "without --max-pods the kubelet default"


def test_bottlerocket_toml() -> None:
    boot = parse(BOTTLEROCKET)
    assert boot is not None and boot.flavor is Flavor.BOTTLEROCKET
    assert (boot.cluster_name, boot.api_server) == ("prod", "https://abc.example")
    assert boot.labels == {"karpenter.sh/nodepool": "default"}
    assert boot.taints == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                           {"key": "dedicated", "effect": "NoExecute"}]
    assert boot.kubelet == {"maxPods": 42, "kubeReserved": {"memory": "500Mi"}}


@pytest.mark.parametrize("text", ["", "#!/bin/bash\necho hello\n", "not = [valid toml", "kind: NodeConfig: x:"])
def test_user_data_without_a_bootstrap_names_no_cluster(text: str) -> None:
    assert parse(text) is None


def test_taint_forms() -> None:
    assert parse_taint("k=v:NoSchedule") == {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert parse_taint("k:NoExecute") == {"key": "k", "effect": "NoExecute"}


def test_cluster_identity_by_endpoint_or_configured_name() -> None:
    boot = parse(BOTTLEROCKET)
    assert boot is not None
    assert ClusterIdentity(url="https://abc.example:443/").named_by(boot)
    assert not ClusterIdentity(url="https://other.example").named_by(boot)
    assert ClusterIdentity(url="https://other.example", name="prod").named_by(boot)
    assert not ClusterIdentity(url="https://other.example", name="dev").named_by(boot)
    assert same_endpoint("http://localhost:8080", "http://127.0.0.1:8080")
    assert not same_endpoint("http://127.0.0.1:8080", "http://127.0.0.1:8081")
    assert not same_endpoint("", "")


def _node_class(family: str, kubelet: dict[str, Any] | None = None) -> EC2NodeClass:
    doc: dict[str, Any] = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "x"},
                           "spec": {"amiFamily": family, "role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                                    "subnetSelectorTerms": [{"id": "subnet-1"}],
                                    "securityGroupSelectorTerms": [{"id": "sg-1"}]}}
    if kubelet:
        doc["spec"]["kubelet"] = copy.deepcopy(kubelet)
    return EC2NodeClass.model_validate(doc)


@pytest.mark.parametrize("family", ["AL2023", "AL2", "Bottlerocket"])
def test_reads_what_nodeflows_launch_sends(family: str) -> None:
    """nodeflow's builders (api/nodeclass_launch.py) and this reader agree on cluster, labels and taints."""
    cluster = ClusterInfo("demo", "http://127.0.0.1:6443", "Q0E=")
    node = NodeIdentity(labels={"karpenter.sh/nodepool": "default", "team": "ml"},
                        taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    boot = parse(user_data(_node_class(family, {"maxPods": 30}), cluster, node))
    assert boot is not None
    assert (boot.cluster_name, boot.api_server) == ("demo", "http://127.0.0.1:6443")
    assert boot.labels == {"karpenter.sh/nodepool": "default", "team": "ml"}
    assert boot.taints == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    assert boot.kubelet.get("maxPods") == 30
    assert ClusterIdentity(url="http://localhost:6443").named_by(boot)
