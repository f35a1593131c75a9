"""EC2NodeClass: YAML round trip, accessors, the static hash, validation with field paths, snapshot and CLI."""

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.ec2nodeclass import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    SECURITY_GROUPS_ANNOTATION,
    SUBNET_ANNOTATION,
    EC2NodeClass,
    launch_annotations,
    recorded_security_groups,
)
from api.ec2nodeclass_validation import validate_ec2nodeclass
from api.snapshot import SnapshotError, parse_snapshot
from starter.cli import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ec2nodeclass.yaml"
VALID: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())

FULL = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu
  annotations:
    karpenter.k8s.aws/ec2nodeclass-hash: abc
spec:
  amiFamily: AL2023
  amiSelectorTerms:
  - name: amazon-eks-node-al2023-*
    owner: "602401143452"
  - tags:
      team: ml
  instanceProfile: KarpenterNodeInstanceProfile
  subnetSelectorTerms:
  - id: subnet-0a1b2c
  securityGroupSelectorTerms:
  - name: eks-cluster-sg
  userData: |
    echo hello
  associatePublicIPAddress: false
  kubelet:
    clusterDNS: [10.100.0.10]
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: true
    evictionSoft: {memory.available: 10%}
    evictionSoftGracePeriod: {memory.available: 1m}
  blockDeviceMappings:
  - deviceName: /dev/xvda
    rootVolume: true
    ebs: {volumeSize: 100Gi, volumeType: gp3, kmsKeyID: alias/ebs, snapshotID: snap-1, iops: 3000}
  metadataOptions: {httpProtocolIPv6: enabled}
status:
  amis:
  - id: ami-2
    name: al2023-new
    requirements:
    - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  subnets:
  - {id: subnet-0a1b2c, zone: us-east-1a, zoneID: use1-az1}
  securityGroups:
  - {id: sg-1, name: eks-cluster-sg}
  instanceProfile: KarpenterNodeInstanceProfile
  conditions:
  - {type: Ready, status: "True", reason: Ready, lastTransitionTime: "2026-01-01T00:00:00Z"}
"""


def with_(path: str, value: Any) -> dict[str, Any]:
    """VALID with the dotted `path` set to `value` (numbers index lists); `...` deletes the key."""
    doc = copy.deepcopy(VALID)
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    target: Any = doc
    for k in keys[:-1]:
        target = target[k]
    if value is ...:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return doc


# -- model ---------------------------------------------------------------------------------------------------

def test_yaml_round_trips_unchanged() -> None:
    doc = yaml.safe_load(FULL)
    nc = EC2NodeClass.model_validate(doc)
    assert nc.to_dict() == doc
    assert list(nc.to_dict()["spec"]) == list(doc["spec"])  # key order kept
    assert EC2NodeClass.model_validate(VALID).to_dict() == VALID


def test_typed_fields_and_status() -> None:
    nc = EC2NodeClass.model_validate(yaml.safe_load(FULL))
    assert nc.spec.block_device_mappings[0].ebs.kms_key_id == "alias/ebs"
    assert nc.spec.kubelet.cluster_dns == ["10.100.0.10"]
    assert nc.spec.kubelet.image_gc_high_threshold_percent == 85
    assert nc.status.subnets[0].zone_id == "use1-az1"
    assert nc.status.amis[0].requirements[0].values == ["amd64"]
    assert nc.ready and nc.status.instance_profile == "KarpenterNodeInstanceProfile"


def test_metadata_defaults_show_through_the_accessor_not_the_dump() -> None:
    nc = EC2NodeClass.model_validate(yaml.safe_load(FULL))
    assert nc.metadata_options_defaulted() == {"httpEndpoint": "enabled", "httpProtocolIPv6": "enabled",
                                               "httpPutResponseHopLimit": 1, "httpTokens": "required"}
    assert nc.to_dict()["spec"]["metadataOptions"] == {"httpProtocolIPv6": "enabled"}


def test_ami_family_comes_from_the_alias_when_unset() -> None:
    nc = EC2NodeClass.model_validate(VALID)
    assert nc.alias() == ("al2023", "latest")
    assert nc.ami_family == "AL2023"
    assert EC2NodeClass.model_validate(with_("spec.amiSelectorTerms", [{"alias": "bottlerocket@v1.20.3"}])) \
        .ami_family == "Bottlerocket"
    assert EC2NodeClass.model_validate(yaml.safe_load(FULL)).alias() is None


# -- static hash ---------------------------------------------------------------------------------------------

def _hash(doc: dict[str, Any]) -> str:
    return EC2NodeClass.model_validate(doc).static_hash()


@pytest.mark.parametrize(("path", "value"), [
    ("spec.subnetSelectorTerms", [{"id": "subnet-1"}]),
    ("spec.securityGroupSelectorTerms", [{"name": "other"}]),
    ("spec.amiSelectorTerms", [{"alias": "al2023@v20240807"}]),
    ("spec.amiFamily", "AL2023"),  # the resolved family is hashed, not the literal field
    ("spec.metadataOptions", ...),  # absent == Karpenter's defaults
    ("spec.tags", {"team": "platform"}),  # same value
])
def test_hash_ignores_dynamic_fields_and_defaults(path: str, value: Any) -> None:
    assert _hash(with_(path, value)) == _hash(VALID)


@pytest.mark.parametrize(("path", "value"), [
    ("spec.userData", "#!/bin/bash\necho hi"),
    ("spec.tags", {"team": "data"}),
    ("spec.metadataOptions.httpPutResponseHopLimit", 2),
    ("spec.blockDeviceMappings.0.ebs.volumeSize", "100Gi"),
    ("spec.kubelet.maxPods", 58),
    ("spec.role", "OtherRole"),
    ("spec.amiSelectorTerms", [{"alias": "bottlerocket@latest"}]),  # a different family is a different node
])
def test_hash_changes_with_static_fields(path: str, value: Any) -> None:
    assert _hash(with_(path, value)) != _hash(VALID)


def test_hash_treats_block_devices_as_a_set_and_zero_values_as_unset() -> None:
    two = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}},
           {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi"}}]
    assert _hash(with_("spec.blockDeviceMappings", two)) == _hash(with_("spec.blockDeviceMappings", two[::-1]))
    assert _hash(with_("spec.detailedMonitoring", False)) == _hash(VALID)
    assert _hash(with_("spec.detailedMonitoring", True)) != _hash(VALID)


def test_launch_annotations_record_hash_subnet_and_groups() -> None:
    nc = EC2NodeClass.model_validate(VALID)
    ann = launch_annotations(nc, "subnet-1", ["sg-2", "sg-1", "sg-2"])
    assert ann == {HASH_ANNOTATION: nc.static_hash(), HASH_VERSION_ANNOTATION: HASH_VERSION,
                   SUBNET_ANNOTATION: "subnet-1", SECURITY_GROUPS_ANNOTATION: "sg-1,sg-2"}
    assert recorded_security_groups(ann[SECURITY_GROUPS_ANNOTATION]) == {"sg-1", "sg-2"}
    assert recorded_security_groups(None) is None


# -- validation ----------------------------------------------------------------------------------------------

def test_examples_are_valid() -> None:
    assert validate_ec2nodeclass(VALID) == []
    assert validate_ec2nodeclass(yaml.safe_load(FULL)) == []


@pytest.mark.parametrize(("path", "value", "expected"), [
    ("spec.subnetSelectorTerms", [{"id": "subnet-1", "tags": {"a": "b"}}],
     "spec.subnetSelectorTerms[0]: 'id' is mutually exclusive"),
    ("spec.subnetSelectorTerms", [], "spec.subnetSelectorTerms: subnetSelectorTerms cannot be empty"),
    ("spec.subnetSelectorTerms", [{}], "spec.subnetSelectorTerms[0]: expected at least one, got none, ['tags', 'id']"),
    ("spec.subnetSelectorTerms", [{"tags": {}}], "spec.subnetSelectorTerms[0].tags: must not be empty"),
    ("spec.subnetSelectorTerms", [{"tags": {"a": ""}}],
     "spec.subnetSelectorTerms[0].tags[a]: empty tag keys or values aren't supported"),
    ("spec.subnetSelectorTerms", [{"id": "subnet-1"}] * 31, "spec.subnetSelectorTerms: has 31 items, at most 30"),
    ("spec.subnetSelectorTerms", [{"id": "sg-1"}], "spec.subnetSelectorTerms[0].id: 'sg-1' does not match"),
    ("spec.subnetSelectorTerms", ..., "spec.subnetSelectorTerms: required field is missing"),
    ("spec.securityGroupSelectorTerms", [{"name": "a", "tags": {"a": "b"}}],
     "spec.securityGroupSelectorTerms[0]: 'name' is mutually exclusive"),
    ("spec.securityGroupSelectorTerms", [{"id": "sg-1"}, {"owner": "x"}],
     "spec.securityGroupSelectorTerms[1].owner: unknown field"),
    ("spec.amiSelectorTerms", [{"id": "ami-1", "owner": "self"}],
     "spec.amiSelectorTerms[0]: 'id' is mutually exclusive"),
    ("spec.amiSelectorTerms", [{"alias": "al2023@latest", "tags": {"a": "b"}}],
     "spec.amiSelectorTerms[0]: 'alias' is mutually exclusive"),
    ("spec.amiSelectorTerms", [{"alias": "al2023@latest"}, {"id": "ami-1"}],
     "spec.amiSelectorTerms: 'alias' is mutually exclusive, cannot be set with a combination of other "
     "amiSelectorTerms"),
    ("spec.amiSelectorTerms", [{"alias": "al2023"}],
     "spec.amiSelectorTerms[0].alias: 'alias' is improperly formatted, must match the format 'family@version'"),
    ("spec.amiSelectorTerms", [{"alias": "ubuntu@latest"}], "spec.amiSelectorTerms[0].alias: family is not supported"),
    ("spec.amiSelectorTerms", [{"alias": "windows2022@v1"}],
     "spec.amiSelectorTerms[0].alias: windows families may only specify version 'latest'"),
    ("spec.amiSelectorTerms", [{"owner": "self"}],
     "spec.amiSelectorTerms[0]: expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"),
    ("spec.amiSelectorTerms", [{"name": "my-ami-*"}],
     "spec.amiFamily: must specify amiFamily if amiSelectorTerms does not contain an alias"),
    ("spec.amiFamily", "Ubuntu", "spec.amiFamily: 'Ubuntu' is not one of"),
    ("spec.amiFamily", "Bottlerocket", "spec.amiFamily: if set, amiFamily must be 'AL2023' or 'Custom' when using "
                                       "an AL2023 alias"),
    ("spec.instanceProfile", "Profile", "spec: must specify exactly one of ['role', 'instanceProfile']"),
    ("spec.role", ..., "spec: must specify exactly one of ['role', 'instanceProfile']"),
    ("spec.role", "", "spec.role: role cannot be empty"),
    ("spec.tags", {"karpenter.sh/nodepool": "x"}, "spec.tags[karpenter.sh/nodepool]: tag contains a restricted tag"),
    ("spec.tags", {"kubernetes.io/cluster/demo": "owned"}, "spec.tags[kubernetes.io/cluster/demo]: tag contains"),
    ("spec.metadataOptions.httpTokens", "never", "spec.metadataOptions.httpTokens: 'never' is not one of"),
    ("spec.metadataOptions.httpPutResponseHopLimit", 65,
     "spec.metadataOptions.httpPutResponseHopLimit: must be an integer from 1 to 64"),
    ("spec.blockDeviceMappings.0.ebs", {"volumeType": "gp3"},
     "spec.blockDeviceMappings[0].ebs: snapshotID or volumeSize must be defined"),
    ("spec.blockDeviceMappings.0.ebs.volumeSize", "100", "spec.blockDeviceMappings[0].ebs.volumeSize: '100' is not"),
    ("spec.blockDeviceMappings.0.ebs.volumeType", "gp9", "spec.blockDeviceMappings[0].ebs.volumeType: 'gp9'"),
    ("spec.blockDeviceMappings", [{"rootVolume": True, "ebs": {"volumeSize": "1Gi"}}] * 2,
     "spec.blockDeviceMappings: must have only one blockDeviceMappings with rootVolume"),
    ("spec.kubelet.systemReserved", {"gpu": "1"}, "spec.kubelet.systemReserved[gpu]: valid keys for systemReserved"),
    ("spec.kubelet.kubeReserved", {"cpu": "-1"}, "spec.kubelet.kubeReserved[cpu]: '-1' is not a non-negative"),
    ("spec.kubelet.evictionHard", {"memory.free": "5%"}, "spec.kubelet.evictionHard[memory.free]: valid keys"),
    ("spec.kubelet.evictionSoft", {"memory.available": "5%"},
     "spec.kubelet.evictionSoft[memory.available]: evictionSoft OwnerKey does not have a matching"),
    ("spec.kubelet.maxPods", -1, "spec.kubelet.maxPods: must be an integer >= 0"),
    ("spec.kubelet.imageGCLowThresholdPercent", 90, "spec.kubelet.imageGCHighThresholdPercent"),
    ("spec.instanceStorePolicy", "RAID1", "spec.instanceStorePolicy: 'RAID1' is not one of RAID0"),
    ("spec.launchTemplateName", "lt", "spec.launchTemplateName: unknown field"),
    ("apiVersion", "karpenter.k8s.aws/v1beta1", "apiVersion: must be 'karpenter.k8s.aws/v1'"),
])
def test_invalid_classes_are_reported_with_field_paths(path: str, value: Any, expected: str) -> None:
    doc = with_(path, value)
    if path == "spec.kubelet.imageGCLowThresholdPercent":
        doc["spec"]["kubelet"]["imageGCHighThresholdPercent"] = 85
        expected = "spec.kubelet: imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"
    problems = validate_ec2nodeclass(doc)
    assert any(p.startswith(expected) for p in problems), problems


def test_every_problem_is_reported() -> None:
    doc = with_("spec.subnetSelectorTerms", [{}])
    doc["spec"]["securityGroupSelectorTerms"] = [{}]
    doc["spec"]["instanceProfile"] = "p"
    problems = validate_ec2nodeclass(doc)
    assert [p.split(":")[0] for p in problems] == ["spec.subnetSelectorTerms[0]", "spec.securityGroupSelectorTerms[0]",
                                                   "spec"]


def test_id_term_alone_and_pinned_alias_are_valid() -> None:
    doc = with_("spec.amiSelectorTerms", [{"alias": "al2023@v20240807"}])
    doc["spec"]["subnetSelectorTerms"] = [{"id": "subnet-0abc"}, {"tags": {"tier": "*"}}]
    doc["spec"]["securityGroupSelectorTerms"] = [{"id": "sg-0abc"}, {"name": "eks-cluster-sg"}]
    doc["spec"]["amiFamily"] = "Custom"
    assert validate_ec2nodeclass(doc) == []


# -- snapshot and CLI ----------------------------------------------------------------------------------------

def test_snapshot_reads_node_classes() -> None:
    snap = parse_snapshot(EXAMPLE.read_text(), "ec2nodeclass.yaml")
    assert [c.name for c in snap.node_classes] == ["default"]
    assert snap.to_objects() == [VALID]
    with pytest.raises(SnapshotError, match=r"apiVersion 'karpenter\.k8s\.aws/v1beta1' is not supported"):
        parse_snapshot(yaml.safe_dump(with_("apiVersion", "karpenter.k8s.aws/v1beta1")), "old.yaml")
    with pytest.raises(SnapshotError, match="duplicate EC2NodeClass"):
        parse_snapshot(yaml.safe_dump_all([VALID, VALID]), "twice.yaml")


def test_validate_prints_field_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(with_("spec.subnetSelectorTerms", [{"id": "subnet-1", "tags": {"a": "b"}}])))
    assert run(["validate", "-f", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "(EC2NodeClass/default): spec.subnetSelectorTerms[0]: 'id' is mutually exclusive" in out
    assert run(["validate", "-f", str(EXAMPLE)]) == 0
