"""Launching from a NodePool's EC2NodeClass: find it Ready, shape RunInstances from it, record what was used.

Used by activities/provisioning.py. A NodePool whose class exists but is not Ready (or is missing while other
classes exist) gets no launch: a Warning Event on the NodePool names what did not resolve, and the activity
fails with the non-retryable `NodeClassNotReady`. When the cluster has no EC2NodeClass at all (or the pool
references another kind), the launch keeps the older path (the worker's `--ami-id`, no subnet choice), with a
warning logged once per process; without `--ami-id` that path refuses the same way rather than guess an image
(an arbitrary Amazon image would boot a node that never joins, or the wrong operating system).
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from temporalio.exceptions import ApplicationError

from api import labels
from api.catalog import InstanceTypeCatalog
from api.ec2nodeclass import KIND, SUBNET_ANNOTATION, EC2NodeClass, launch_annotations, load_ec2nodeclass
from api.nodeclass_launch import (
    ClusterInfo,
    NodeIdentity,
    block_device_mappings,
    instance_tags,
    metadata_options,
    node_identity,
    subnet_in_zone,
    user_data,
)
from contracts.errors import ErrorType
from gateways.kube import KubeClient, Obj
from planning.lifecycle.nodeclass_drift import LaunchRecord, expected_image

log = logging.getLogger(__name__)

NOT_READY = ErrorType.NODE_CLASS_NOT_READY.value  # also the Event reason


class NodeClassLauncher:
    """Reads the class through the Kubernetes gateway; builds RunInstances parameters; records the launch."""

    def __init__(self, kube: KubeClient, catalog: InstanceTypeCatalog, cluster: ClusterInfo | None = None,
                 ami_id: str | None = None) -> None:
        self._kube = kube
        self._catalog = catalog
        self._cluster = cluster or ClusterInfo("", "", "")
        self._ami_id = ami_id  # the older path's image (the worker's --ami-id); None: that path launches nothing
        self._warned = False

    def node_class_for(self, pool: Obj) -> EC2NodeClass | None:
        """The pool's Ready EC2NodeClass; None for the legacy path (no EC2NodeClass in the cluster at all), which
        launches the configured image.

        Raises ApplicationError(type NodeClassNotReady, non-retryable) after an Event on the NodePool otherwise, and
        on the legacy path when no image is configured.
        """
        pool_name = (pool.get("metadata") or {}).get("name", "")
        ref = ((((pool.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef")) or {}
        name = ref.get("name") or ""
        if ref.get("kind", KIND) != KIND:
            return self._legacy(pool, f"NodePool {pool_name} references a {ref.get('kind')}, not an {KIND}")
        obj = self._kube.get_node_class(name)
        if obj is None:
            if not self._kube.list_node_classes():
                return self._legacy(pool, "the cluster has no EC2NodeClass")
            self._refuse(pool, f"EC2NodeClass {name!r} not found")
        nc = load_ec2nodeclass(obj)
        if not nc.ready:
            ready = nc.condition("Ready")
            why = (ready.message or ready.reason) if ready is not None else "not resolved yet (no Ready condition)"
            self._refuse(pool, f"EC2NodeClass {name!r} is not Ready: {why}")
        return nc

    def _refuse(self, pool: Obj, message: str) -> None:
        pool_name = pool["metadata"]["name"]
        self._kube.event("NodePool", pool, pool_name, NOT_READY, f"no launch for NodePool {pool_name}: {message}",
                         type_="Warning")
        raise ApplicationError(message, type=NOT_READY, non_retryable=True)

    def _legacy(self, pool: Obj, why: str) -> None:
        """The older path: the configured image, else a refusal naming both ways out."""
        if self._ami_id is None:
            self._refuse(pool, f"{why} and the worker has no --ami-id (NODEFLOW_AMI_ID): create an {KIND} for "
                               f"the pool (amiSelectorTerms, e.g. alias al2023@latest) or start the worker with "
                               f"--ami-id")
        if not self._warned:
            self._warned = True
            log.warning("%s: launching without a node class (AMI %s from --ami-id, default subnet and security "
                        "group, no instance profile or user data)", why, self._ami_id)

    def image_for(self, nc: EC2NodeClass, instance_type: str) -> str | None:
        """The first image of status.amis (best first) compatible with the type's architecture, as drift picks."""
        it = self._catalog.get(instance_type)
        arch = it.arch if it is not None else "amd64"
        record = LaunchRecord(image_id=None, subnet_id=None, security_group_ids=None,
                              labels={labels.ARCH_LABEL: arch, labels.INSTANCE_TYPE_LABEL: instance_type})
        return expected_image(record, nc)

    def run_params(self, nc: EC2NodeClass, claim: Obj, node_pool: str, instance_type: str,
                   zone: str) -> dict[str, Any]:
        """RunInstances parameters from the class (image, subnet, groups, profile, user data, disks, IMDS, tags).

        Raises ValueError when the class cannot serve this launch (no image for the architecture, no subnet in
        the zone, user data that cannot be built).
        """
        image = self.image_for(nc, instance_type)
        if image is None:
            raise ValueError(f"EC2NodeClass {nc.name} has no image for instance type {instance_type}")
        subnet = subnet_in_zone(nc, zone)
        if subnet is None:
            raise ValueError(f"EC2NodeClass {nc.name} has no subnet in {zone}")
        groups = [g.id for g in nc.status.security_groups or ()]
        meta = claim["metadata"]
        data = user_data(nc, self._cluster, node_identity(claim, nc.ami_family, instance_type, zone))
        tags = instance_tags(nc, self._cluster.name or "nodeflow", node_pool, meta["name"])
        params: dict[str, Any] = {
            "ImageId": image, "BlockDeviceMappings": block_device_mappings(nc),
            "MetadataOptions": metadata_options(nc), "Tags": tags,
        }
        if nc.spec.associate_public_ip_address is not None:
            params["NetworkInterfaces"] = [{"DeviceIndex": 0, "SubnetId": subnet.id, "Groups": groups,
                                            "AssociatePublicIpAddress": nc.spec.associate_public_ip_address}]
        else:
            params.update(SubnetId=subnet.id, SecurityGroupIds=groups)
        if nc.status.instance_profile:
            params["IamInstanceProfile"] = {"Name": nc.status.instance_profile}
        if data:
            params["UserData"] = data
        if nc.spec.detailed_monitoring:
            params["Monitoring"] = {"Enabled": True}
        return params

    def template_data(self, nc: EC2NodeClass, claim: Obj, instance_type: str) -> dict[str, Any]:
        """Launch template data for a fleet launch of `instance_type` (CreateLaunchTemplate's casing): what
        `run_params` sends less the subnet (an override's) and the tags (the fleet request's), with the user data
        base64-encoded. The kubelet's labels leave out the instance type and zone, which the fleet picks and the
        cloud controller manager labels, as Karpenter's templates do; types that share every parameter share a
        template. Raises ValueError as `run_params` does."""
        image = self.image_for(nc, instance_type)
        if image is None:
            raise ValueError(f"EC2NodeClass {nc.name} has no image for instance type {instance_type}")
        base = node_identity(claim, nc.ami_family, instance_type, "")
        identity = NodeIdentity(labels={k: v for k, v in base.labels.items()
                                        if k not in (labels.INSTANCE_TYPE_LABEL, labels.ZONE_LABEL)},
                                taints=base.taints)
        data: dict[str, Any] = {"ImageId": image, "BlockDeviceMappings": block_device_mappings(nc),
                                "MetadataOptions": metadata_options(nc)}
        groups = [g.id for g in nc.status.security_groups or ()]
        if nc.spec.associate_public_ip_address is not None:
            data["NetworkInterfaces"] = [{"DeviceIndex": 0, "Groups": groups,
                                          "AssociatePublicIpAddress": nc.spec.associate_public_ip_address}]
        else:
            data["SecurityGroupIds"] = groups
        if nc.status.instance_profile:
            data["IamInstanceProfile"] = {"Name": nc.status.instance_profile}
        text = user_data(nc, self._cluster, identity)
        if text:
            data["UserData"] = base64.b64encode(text.encode()).decode()
        if nc.spec.detailed_monitoring:
            data["Monitoring"] = {"Enabled": True}
        return data

    def record(self, claim: Obj, instance: dict[str, Any], nc: EC2NodeClass) -> None:
        """Stamp the claim with what the instance was launched with (drift compares against it): the class hash,
        subnet and security groups as annotations, the image as status.imageID. Once per claim."""
        meta = claim["metadata"]
        if (meta.get("annotations") or {}).get(SUBNET_ANNOTATION):
            return
        groups = [g["GroupId"] for g in instance.get("SecurityGroups") or [] if g.get("GroupId")]
        annotations = launch_annotations(nc, instance.get("SubnetId") or "", groups)
        self._kube.patch_node_claim(meta["name"], {"metadata": {"annotations": annotations}})
        if instance.get("ImageId"):
            self._kube.patch_node_claim_status(meta["name"], {"status": {"imageID": instance["ImageId"]}})
