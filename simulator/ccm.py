"""The AWS cloud controller manager, as far as nodes go: the cloud-node controller initializes a registered Node
from its instance (instance-type, zone and region labels; the uninitialized taint removed), and the node
lifecycle controller takes away a Node whose instance is stopping or gone (docs/architecture.md, "Simulated
kubelets and CCM"). Finalizers (nodeflow's) hold a deleted Node. Everything runs under the store lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from api import labels as L
from simulator.kubelet import UNINITIALIZED_TAINT
from simulator.patch import deep_copy
from simulator.pods import is_deleting, node_ready, set_condition
from simulator.resources import BY_KIND

if TYPE_CHECKING:
    from simulator.world import World

NODES = BY_KIND["Node"]
ZONE_ID_LABEL = "topology.k8s.aws/zone-id"


def is_uninitialized(node: dict[str, Any]) -> bool:
    return any(t.get("key") == UNINITIALIZED_TAINT["key"] for t in (node.get("spec") or {}).get("taints") or [])


def cloud_labels(inst: dict[str, Any], zone_id: str = "") -> dict[str, str]:
    """The labels the cloud-node controller sets from DescribeInstances (GA and the beta names it still keeps);
    `topology.k8s.aws/zone-id` when the zone's id is known (DescribeAvailabilityZones)."""
    itype = inst.get("InstanceType", "")
    zone = (inst.get("Placement") or {}).get("AvailabilityZone", "")
    region = zone[:-1] if zone and zone[-1].isalpha() else zone
    out = {L.INSTANCE_TYPE_LABEL: itype, "beta.kubernetes.io/instance-type": itype,
           L.ZONE_LABEL: zone, "failure-domain.beta.kubernetes.io/zone": zone,
           L.REGION_LABEL: region, "failure-domain.beta.kubernetes.io/region": region}
    if zone_id:
        out[ZONE_ID_LABEL] = zone_id
    return out


class CloudControllerManager:
    def __init__(self, world: World) -> None:
        self.world = world
        self.zone_ids: dict[str, str] = {}  # zone name -> zone id, filled from the EC2 side

    def initialize(self, node: dict[str, Any], inst: dict[str, Any]) -> None:
        """Cloud-node controller: labels from the instance, then the uninitialized taint goes."""
        if not is_uninitialized(node) or is_deleting(node):
            return
        new = deep_copy(node)
        zone = (inst.get("Placement") or {}).get("AvailabilityZone", "")
        new["metadata"].setdefault("labels", {}).update(cloud_labels(inst, self.zone_ids.get(zone, "")))
        new["spec"]["taints"] = [t for t in new["spec"].get("taints") or []
                                 if t.get("key") != UNINITIALIZED_TAINT["key"]]
        if not new["spec"]["taints"]:
            del new["spec"]["taints"]
        self.world.store.replace(NODES, new)

    def instance_gone(self, node_name: str) -> None:
        """Instance stopping / terminated: the Node goes NotReady (Unknown), then is deleted after the ready
        delay; finalizers hold it."""
        world = self.world
        node = world.store.get(NODES, "", node_name)
        if node is None:
            return
        if node_ready(node):
            new = deep_copy(node)
            set_condition(new, "Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
            world.store.replace(NODES, new)

        def delete_node() -> None:
            current = world.store.get(NODES, "", node_name)
            if current is not None and not is_deleting(current):
                world.delete(NODES, "", node_name)

        world.after(world.ready_delay, delete_node)
