"""What a launch from a Ready EC2NodeClass sends to RunInstances: image, subnet, user data, disks, IMDS, tags.

Pure: the launch activity (activities/provisioning.py) reads the class and the NodeClaim, calls these, and makes
the EC2 call. User data bootstraps the node into the cluster: AL2023 a `nodeadm` NodeConfig in a MIME document,
AL2 `/etc/eks/bootstrap.sh`, Bottlerocket its TOML settings, Custom the class's `userData` as written.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email import message_from_string
from typing import Any

import yaml

from api.ec2nodeclass import BlockDeviceMapping, EC2NodeClass, SubnetStatus
from api.labels import INSTANCE_TYPE_LABEL, NODECLAIM_TAG, NODEPOOL_TAG, ZONE_LABEL
from api.node_registration import kubelet_labels, registration_taints
from api.quantity import parse_memory

MIME_BOUNDARY = "//"
NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
EKS_CLUSTER_TAG = "eks:eks-cluster-name"
# Karpenter's default root volumes per family when the class names none.
_DEFAULT_DISKS: dict[str, list[dict[str, Any]]] = {
    "Bottlerocket": [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 4, "VolumeType": "gp3", "Encrypted": True}},
                     {"DeviceName": "/dev/xvdb", "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": True}}],
    "Windows2019": [{"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 50, "VolumeType": "gp3", "Encrypted": True}}],
    "Windows2022": [{"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 50, "VolumeType": "gp3", "Encrypted": True}}],
}
_DEFAULT_ROOT = [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": True}}]


@dataclass(frozen=True)
class ClusterInfo:
    """What a node needs to join: the EKS cluster's name, API endpoint and CA bundle (base64)."""

    name: str
    endpoint: str
    ca: str

    def missing(self) -> list[str]:
        return [f for f in ("name", "endpoint", "ca") if not getattr(self, f)]


@dataclass(frozen=True)
class NodeIdentity:
    """Labels and taints the kubelet registers the node with (from the NodeClaim)."""

    labels: Mapping[str, str]
    taints: Sequence[Mapping[str, Any]]


def node_identity(claim: Mapping[str, Any], family: str, instance_type: str, zone: str) -> NodeIdentity:
    """What the kubelet of this launch registers with, as Karpenter's (api/node_registration.py): the claim's labels
    and single-valued requirements it may set itself, the chosen instance type and zone, and the claim's taints
    plus `karpenter.sh/unregistered:NoExecute`. Custom sends no nodeflow bootstrap, so it keeps taint sync on."""
    node_labels = {**kubelet_labels(claim, sync_taints_in_kubelet=family != "Custom"),
                   INSTANCE_TYPE_LABEL: instance_type, ZONE_LABEL: zone}
    return NodeIdentity(labels=node_labels, taints=registration_taints(claim))


def instance_profile_name(cluster: str, region: str, node_class: str) -> str:
    """The profile made for a class's `role`: Karpenter's form `<cluster>_<number>`, the number derived from the
    region and the class name (our sha256, not Karpenter's hashstructure, so the names differ from Karpenter's)."""
    digest = int.from_bytes(hashlib.sha256(f"{region}{node_class}".encode()).digest()[:8], "big")
    return f"{cluster}_{digest}"[:128]


def subnet_in_zone(nc: EC2NodeClass, zone: str) -> SubnetStatus | None:
    """The subnet to launch into in `zone`: status.subnets is sorted most free addresses first (as resolved),
    so the first one in that zone."""
    return next((s for s in nc.status.subnets or () if s.zone == zone), None)


def subnet_zones(nc: EC2NodeClass) -> set[str]:
    return {s.zone for s in nc.status.subnets or () if s.zone}


def metadata_options(nc: EC2NodeClass) -> dict[str, Any]:
    """IMDS options in RunInstances' casing, Karpenter's defaults (IMDSv2 required, hop limit 1) filled in."""
    o = nc.metadata_options_defaulted()
    return {"HttpEndpoint": o["httpEndpoint"], "HttpProtocolIpv6": o["httpProtocolIPv6"],
            "HttpPutResponseHopLimit": int(o["httpPutResponseHopLimit"]), "HttpTokens": o["httpTokens"]}


def _ebs(mapping: BlockDeviceMapping) -> dict[str, Any]:
    e = mapping.ebs
    if e is None:
        return {}
    out: dict[str, Any] = {"DeleteOnTermination": e.delete_on_termination, "Encrypted": e.encrypted,
                           "Iops": e.iops, "KmsKeyId": e.kms_key_id, "SnapshotId": e.snapshot_id,
                           "Throughput": e.throughput, "VolumeType": e.volume_type}
    if e.volume_size:
        out["VolumeSize"] = math.ceil(parse_memory(e.volume_size) / 2**30)  # GiB, rounded up
    return {k: v for k, v in out.items() if v is not None}


def block_device_mappings(nc: EC2NodeClass) -> list[dict[str, Any]]:
    """The class's disks in RunInstances' shape; without any, the family's default root volume."""
    if not nc.spec.block_device_mappings:
        return json.loads(json.dumps(_DEFAULT_DISKS.get(nc.ami_family, _DEFAULT_ROOT)))
    return [{"DeviceName": m.device_name, "Ebs": _ebs(m)} for m in nc.spec.block_device_mappings if m.device_name]


def cluster_tags(cluster: str) -> dict[str, str]:
    """The tags that say an instance belongs to `cluster` (garbage collection lists only these; none without a
    name, so no other cluster's collector takes the instance for its own)."""
    return {f"kubernetes.io/cluster/{cluster}": "owned", EKS_CLUSTER_TAG: cluster} if cluster else {}


def instance_tags(nc: EC2NodeClass, cluster: str, node_pool: str, node_claim: str) -> dict[str, str]:
    """The class's tags, then Karpenter's own (which win): pool, claim, class, cluster ownership."""
    return {**(nc.spec.tags or {}), NODEPOOL_TAG: node_pool, NODECLAIM_TAG: node_claim,
            NODECLASS_TAG: nc.name, **cluster_tags(cluster)}


# -- user data -----------------------------------------------------------------------------------------------

def _label_flag(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _taint_flag(taints: Sequence[Mapping[str, Any]]) -> str:
    return ",".join(f"{t['key']}={t['value']}:{t['effect']}" if t.get("value") else f"{t['key']}:{t['effect']}"
                    for t in taints)


def _kubelet_config(nc: EC2NodeClass) -> dict[str, Any]:
    return nc.spec.kubelet.model_dump(mode="json", by_alias=True, exclude_none=True) if nc.spec.kubelet else {}


def _mime(parts: Sequence[tuple[str, str]]) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"', ""]
    for content_type, body in parts:
        lines += [f"--{MIME_BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n"), ""]
    return "\n".join([*lines, f"--{MIME_BOUNDARY}--", ""])


def _custom_parts(user_data: str | None) -> list[tuple[str, str]]:
    """The class's own user data as MIME parts, run before nodeflow's (Karpenter merges them the same way)."""
    if not user_data or not user_data.strip():
        return []
    if user_data.lstrip().startswith("MIME-Version"):
        msg = message_from_string(user_data)
        return [(p.get("Content-Type", "text/x-shellscript"), str(p.get_payload()))
                for p in msg.walk() if not p.is_multipart()]
    if "kind: NodeConfig" in user_data:
        return [("application/node.eks.aws", user_data)]
    return [('text/x-shellscript; charset="us-ascii"', user_data)]


def al2023_user_data(nc: EC2NodeClass, cluster: ClusterInfo, node: NodeIdentity) -> str:
    """A MIME document whose nodeflow part is a `nodeadm` NodeConfig: cluster, kubelet config, labels, taints."""
    flags = [f"--node-labels={_label_flag(node.labels)}"] if node.labels else []
    if node.taints:
        flags.append(f"--register-with-taints={_taint_flag(node.taints)}")
    kubelet: dict[str, Any] = {}
    if _kubelet_config(nc):
        kubelet["config"] = _kubelet_config(nc)
    if flags:
        kubelet["flags"] = flags
    spec: dict[str, Any] = {"cluster": {"name": cluster.name, "apiServerEndpoint": cluster.endpoint,
                                        "certificateAuthority": cluster.ca}}
    if kubelet:
        spec["kubelet"] = kubelet
    doc = yaml.safe_dump({"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec},
                         sort_keys=False)
    return _mime([*_custom_parts(nc.spec.user_data), ("application/node.eks.aws", doc)])


def al2_user_data(nc: EC2NodeClass, cluster: ClusterInfo, node: NodeIdentity) -> str:
    """A MIME document whose nodeflow part runs `/etc/eks/bootstrap.sh` with labels, taints and max pods."""
    extra = [f"--node-labels={_label_flag(node.labels)}"] if node.labels else []
    if node.taints:
        extra.append(f"--register-with-taints={_taint_flag(node.taints)}")
    max_pods = _kubelet_config(nc).get("maxPods")
    if max_pods:
        extra.append(f"--max-pods={max_pods}")
    script = "\n".join([
        "#!/bin/bash -xe",
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
        f"/etc/eks/bootstrap.sh '{cluster.name}' --apiserver-endpoint '{cluster.endpoint}' "
        f"--b64-cluster-ca '{cluster.ca}'" + (" --use-max-pods false" if max_pods else "")
        + (f" --kubelet-extra-args '{' '.join(extra)}'" if extra else ""),
    ])
    return _mime([*_custom_parts(nc.spec.user_data), ('text/x-shellscript; charset="us-ascii"', script)])


def bottlerocket_user_data(nc: EC2NodeClass, cluster: ClusterInfo, node: NodeIdentity) -> str:
    """Bottlerocket TOML settings (the class's own TOML first, nodeflow's settings tables after it)."""
    lines = [(nc.spec.user_data or "").rstrip("\n"), "[settings.kubernetes]",
             f"cluster-name = {json.dumps(cluster.name)}", f"api-server = {json.dumps(cluster.endpoint)}",
             f"cluster-certificate = {json.dumps(cluster.ca)}"]
    max_pods = _kubelet_config(nc).get("maxPods")
    if max_pods:
        lines.append(f"max-pods = {int(max_pods)}")
    if node.labels:
        lines += ["[settings.kubernetes.node-labels]",
                  *(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in sorted(node.labels.items()))]
    if node.taints:
        by_key: dict[str, list[str]] = {}
        for t in node.taints:  # a TOML key appears once: a key's effects share its list
            by_key.setdefault(t["key"], []).append(_bottlerocket_taint(t))
        lines.append("[settings.kubernetes.node-taints]")
        lines += [f"{json.dumps(k)} = [{', '.join(json.dumps(v) for v in vs)}]" for k, vs in by_key.items()]
    return "\n".join(line for line in lines if line) + "\n"


def _bottlerocket_taint(taint: Mapping[str, Any]) -> str:
    """`value:Effect` (`:Effect` without a value), Bottlerocket's form."""
    return f"{taint.get('value') or ''}:{taint['effect']}"


def user_data(nc: EC2NodeClass, cluster: ClusterInfo, node: NodeIdentity) -> str:
    """The bootstrap for the class's AMI family; raises ValueError when it cannot be built."""
    family = nc.ami_family
    if family == "Custom":
        return nc.spec.user_data or ""
    if cluster.missing():
        raise ValueError(f"{family} nodes need the cluster's {', '.join(cluster.missing())} to join "
                         f"(NODEFLOW_CLUSTER_NAME, NODEFLOW_CLUSTER_ENDPOINT, NODEFLOW_CLUSTER_CA)")
    builders = {"AL2023": al2023_user_data, "AL2": al2_user_data, "Bottlerocket": bottlerocket_user_data}
    if family not in builders:
        raise ValueError(f"amiFamily {family} is not supported by nodeflow's launch; use amiFamily Custom with "
                         f"spec.userData")
    return builders[family](nc, cluster, node)
