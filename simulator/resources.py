"""The resource types the simulator serves: group, version, plural, kind, scope and subresources.

One table drives routing, discovery and storage, so adding a type is one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    custom: bool = False  # a CRD: no strategic merge patch, like a real API server
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = field(
        default=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"))

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "namespaces", "Namespace", False, "namespace", ("ns",), ("status",)),
    ResourceType("", "v1", "nodes", "Node", False, "node", ("no",), ("status",)),
    ResourceType("", "v1", "pods", "Pod", True, "pod", ("po",), ("status", "eviction", "binding"), categories=("all",)),
    ResourceType("", "v1", "events", "Event", True, "event", ("ev",)),
    ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, "persistentvolumeclaim",
                 ("pvc",), ("status",)),
    ResourceType("", "v1", "persistentvolumes", "PersistentVolume", False, "persistentvolume", ("pv",), ("status",)),
    ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, "poddisruptionbudget",
                 ("pdb",), ("status",)),
    ResourceType("karpenter.sh", "v1", "nodepools", "NodePool", False, "nodepool", (), ("status",), custom=True,
                 categories=("karpenter",)),
    ResourceType("karpenter.sh", "v1", "nodeclaims", "NodeClaim", False, "nodeclaim", (), ("status",), custom=True,
                 categories=("karpenter",)),
    ResourceType("karpenter.k8s.aws", "v1", "ec2nodeclasses", "EC2NodeClass", False, "ec2nodeclass", (), ("status",),
                 custom=True, categories=("karpenter",)),
    ResourceType("nodeflow.dev", "v1alpha1", "disruptionpolicies", "DisruptionPolicy", False, "disruptionpolicy",
                 ("dp",), ("status",), custom=True, categories=("nodeflow",)),
    ResourceType("karpenter.sh", "v1alpha1", "nodeoverlays", "NodeOverlay", False, "nodeoverlay", ("overlays",),
                 ("status",), custom=True, categories=("karpenter",)),
    # CapacityBuffer (Karpenter v1.14 serves the Cluster Autoscaler's CRD) and the PodTemplates it names: stored only
    ResourceType("autoscaling.x-k8s.io", "v1beta1", "capacitybuffers", "CapacityBuffer", True, "capacitybuffer",
                 ("cb",), ("status",), custom=True, categories=("autoscaling",)),
    ResourceType("", "v1", "podtemplates", "PodTemplate", True, "podtemplate"),
    ResourceType("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, "volumeattachment", (),
                 ("status",)),
    # Read by the scheduler's VolumeBinding filter (WaitForFirstConsumer): simulator/scheduling_volumes.py
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, "storageclass", ("sc",)),
    # Stored only (kubelet's CSI driver registration is not simulated): what a node's drivers may attach, which
    # nodeflow's scheduling simulation reads (its attachment limits, docs/semantics.md §3.5)
    ResourceType("storage.k8s.io", "v1", "csinodes", "CSINode", False, "csinode"),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True, "lease"),
    ResourceType("apps", "v1", "replicasets", "ReplicaSet", True, "replicaset", ("rs",), ("status", "scale"),
                 categories=("all",)),
    ResourceType("apps", "v1", "statefulsets", "StatefulSet", True, "statefulset", ("sts",), ("status", "scale"),
                 categories=("all",)),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, "daemonset", ("ds",), ("status",),
                 categories=("all",)),
    ResourceType("apps", "v1", "deployments", "Deployment", True, "deployment", ("deploy",), ("status", "scale"),
                 categories=("all",)),
    # Stored only (no controllers), so `kubectl apply -k deploy/` works against the simulator (docs/decisions.md §11).
    ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True, "serviceaccount", ("sa",)),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, "configmap", ("cm",)),
    ResourceType("", "v1", "services", "Service", True, "service", ("svc",), ("status",), categories=("all",)),
    ResourceType("batch", "v1", "jobs", "Job", True, "job", (), ("status",), categories=("all",)),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, "clusterrole"),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False,
                 "clusterrolebinding"),
    ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True, "role"),
    ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, "rolebinding"),
    ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
                 "customresourcedefinition", ("crd", "crds"), ("status",)),
)

BY_GROUP_VERSION_PLURAL: dict[tuple[str, str, str], ResourceType] = {
    (r.group, r.version, r.plural): r for r in RESOURCE_TYPES
}
BY_KIND: dict[str, ResourceType] = {}
for _r in RESOURCE_TYPES:
    BY_KIND.setdefault(_r.kind, _r)  # the first table entry of a kind is its preferred group


def group_versions() -> dict[str, list[str]]:
    """Named groups (not the core group) and their versions, in table order."""
    out: dict[str, list[str]] = {}
    for r in RESOURCE_TYPES:
        if r.group and r.version not in out.setdefault(r.group, []):
            out[r.group].append(r.version)
    return out


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    return BY_GROUP_VERSION_PLURAL.get((group, version, plural))


def for_object(obj: dict) -> ResourceType | None:
    """The resource type of an object by its apiVersion and kind (None when not served)."""
    kind, api_version = obj.get("kind", ""), obj.get("apiVersion")
    for rt in RESOURCE_TYPES:
        if rt.kind == kind and rt.api_version == api_version:
            return rt
    return None
