"""NodeClaim model: status, conditions, timestamps and round trip."""

from datetime import UTC, datetime, timedelta

import yaml

from api.nodeclaim import NodeClaim

DOC = """\
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default-x7k2p
  labels:
    karpenter.sh/nodepool: default
    node.kubernetes.io/instance-type: m5.large
  annotations:
    karpenter.sh/nodepool-hash: "4821"
  creationTimestamp: "2026-11-01T08:00:00Z"
  ownerReferences:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    name: default
    uid: 7d2f
    blockOwnerDeletion: true
spec:
  requirements:
  - key: karpenter.sh/capacity-type
    operator: In
    values: [on-demand]
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  resources:
    requests: {cpu: 1500m, memory: 3Gi, pods: "5"}
  expireAfter: Never
  terminationGracePeriod: 1h
status:
  providerID: aws:///us-east-1a/i-0abc
  nodeName: ip-10-0-1-5.ec2.internal
  imageID: ami-0123
  capacity: {cpu: "2", memory: 8Gi}
  allocatable: {cpu: 1930m, memory: 7Gi}
  lastPodEventTime: "2026-11-01T09:30:00.25Z"
  conditions:
  - type: Initialized
    status: "True"
    reason: Initialized
    message: ""
    lastTransitionTime: "2026-11-01T08:01:30Z"
  - type: Drifted
    status: "False"
    reason: NotDrifted
    lastTransitionTime: "2026-11-01T08:01:30Z"
"""


def test_round_trip() -> None:
    doc = yaml.safe_load(DOC)
    assert NodeClaim.model_validate(doc).to_dict() == doc


def test_accessors_and_conditions() -> None:
    nc = NodeClaim.model_validate(yaml.safe_load(DOC))
    assert nc.name == "default-x7k2p"
    assert nc.node_pool == "default"
    assert nc.provider_id == "aws:///us-east-1a/i-0abc"
    assert nc.node_name == "ip-10-0-1-5.ec2.internal"
    assert nc.status.image_id == "ami-0123"
    assert nc.status.last_pod_event_time == datetime(2026, 11, 1, 9, 30, 0, 250000, tzinfo=UTC)
    assert nc.created == datetime(2026, 11, 1, 8, tzinfo=UTC)
    assert nc.expire_after is None
    assert nc.termination_grace_period == timedelta(hours=1)
    assert nc.is_true("Initialized") and not nc.is_true("Drifted") and not nc.is_true("Consolidatable")
    drifted = nc.condition("Drifted")
    assert drifted is not None and drifted.reason == "NotDrifted"
    assert nc.condition("Missing") is None
    assert not nc.deleting
    assert nc.metadata.owner_references is not None and nc.metadata.owner_references[0].kind == "NodePool"


def test_minimal_claim_defaults() -> None:
    nc = NodeClaim.model_validate({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "n"}})
    assert nc.expire_after == timedelta(hours=720)
    assert nc.provider_id is None and nc.node_pool is None
    assert nc.to_dict() == {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "n"}}


def test_yaml_datetimes_are_accepted_and_written_back_as_rfc3339() -> None:
    doc = yaml.safe_load(DOC.replace('"2026-11-01T08:00:00Z"', "2026-11-01T08:00:00Z"))
    assert isinstance(doc["metadata"]["creationTimestamp"], datetime)
    out = NodeClaim.model_validate(doc).to_dict()
    assert out["metadata"]["creationTimestamp"] == "2026-11-01T08:00:00Z"
