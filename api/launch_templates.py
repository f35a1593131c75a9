"""Which EC2 launch templates are nodeflow's, whose, and which are left over (leaked).

A fleet launch makes one template per distinct parameter set (activities/fleet_launch.py), named
`nodeflow.dev/<hash>` and tagged `karpenter.k8s.aws/ec2nodeclass: <class>` plus the cluster's tags
(`eks:eks-cluster-name`, `kubernetes.io/cluster/<name>`), as Karpenter tags its own
(aws/karpenter-provider-aws `pkg/providers/launchtemplate`). Those tags are how a class's templates are found
when the class is deleted, and how an audit tells a leaked template from a live one. Pure: dicts as
DescribeLaunchTemplates returns them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from api.nodeclass_launch import EKS_CLUSTER_TAG, NODECLASS_TAG

NAME_PREFIX = "nodeflow.dev/"  # Karpenter's are karpenter.k8s.aws/<hash>
NODECLASS_FINALIZER = "karpenter.k8s.aws/termination"  # Karpenter's v1.TerminationFinalizer on an EC2NodeClass
__all__ = [
    "EKS_CLUSTER_TAG",
    "NAME_PREFIX",
    "NODECLASS_FINALIZER",
    "NODECLASS_TAG",
    "DeleteReason",
    "class_filters",
    "cluster_of",
    "is_ours",
    "leaked",
    "of_class",
    "tags_of",
]


class DeleteReason(StrEnum):
    """Why a template was deleted (the metric's label values, so they never change)."""

    UNUSED = "unused"  # no launch of this worker process used it for a minute (Karpenter's cache eviction)
    NODECLASS_DELETED = "nodeclass_deleted"  # its EC2NodeClass went (Karpenter's DeleteAll from the finalizer)


def tags_of(template: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in template.get("Tags") or []}


def cluster_of(template: Mapping[str, Any]) -> str:
    """The cluster a template was made for ("" when it was made without a cluster name)."""
    return tags_of(template).get(EKS_CLUSTER_TAG, "")


def is_ours(template: Mapping[str, Any], cluster: str) -> bool:
    """Made by nodeflow for `cluster`: its name prefix, a class tag, and this cluster's tag (none when the worker
    runs without a cluster name, so another cluster's templates are never taken for ours)."""
    name = str(template.get("LaunchTemplateName") or "")
    return name.startswith(NAME_PREFIX) and NODECLASS_TAG in tags_of(template) and cluster_of(template) == cluster


def of_class(templates: Iterable[Mapping[str, Any]], cluster: str, node_class: str) -> list[Mapping[str, Any]]:
    """The templates made for `node_class` in `cluster` (what the class's deletion deletes)."""
    return [t for t in templates if is_ours(t, cluster) and tags_of(t)[NODECLASS_TAG] == node_class]


def class_filters(cluster: str, node_class: str) -> list[dict[str, Any]]:
    """DescribeLaunchTemplates filters narrowing to a class's templates (`of_class` decides; EC2 only narrows)."""
    filters = [{"Name": f"tag:{NODECLASS_TAG}", "Values": [node_class]}]
    if cluster:
        filters.append({"Name": f"tag:{EKS_CLUSTER_TAG}", "Values": [cluster]})
    return filters


def leaked(templates: Iterable[Mapping[str, Any]], cluster: str, node_classes: Iterable[str]) -> list[str]:
    """Names of this cluster's nodeflow templates whose EC2NodeClass no longer exists: nothing deletes them once
    their class is gone, so each is an EC2 object left behind (counted against the account's template quota)."""
    live = set(node_classes)
    return sorted(str(t["LaunchTemplateName"]) for t in templates
                  if is_ours(t, cluster) and tags_of(t)[NODECLASS_TAG] not in live)
