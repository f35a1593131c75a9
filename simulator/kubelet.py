"""The kubelet of a simulated EC2 node: registers the Node as nodeadm/bootstrap.sh configure it, turns it Ready
after the ready delay, and renews its Lease in kube-node-lease.

It writes what a kubelet writes and nothing else (docs/architecture.md, "Simulated kubelets and CCM"): labels
only from --node-labels plus its own, taints only from --register-with-taints plus the cloud provider's
uninitialized taint (--cloud-provider=external), never a finalizer, an ownerReference to a NodeClaim or a
karpenter.sh label it was not given. Everything runs under the store lock.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from api import labels as L
from api.quantity import parse_memory
from simulator.kubelet_resources import Machine, node_resources
from simulator.patch import deep_copy
from simulator.pods import is_deleting, meta, node_ready, set_condition
from simulator.resources import BY_KIND
from simulator.user_data import Bootstrap, Flavor

if TYPE_CHECKING:
    from simulator.world import World

NODES = BY_KIND["Node"]
LEASES = BY_KIND["Lease"]
LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
LEASE_RENEW_SECONDS = 10.0  # the kubelet's renew interval (a quarter of the lease duration)
LEASE_RENEW_FLOOR_REAL_SECONDS = 5.0  # at a small time_scale, renew no faster than this in wall time
KUBELET_VERSION = "v1.32.0"
UNINITIALIZED_TAINT = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
                       "effect": "NoSchedule"}
_PRESSURE_REASONS = {"MemoryPressure": "KubeletHasSufficientMemory", "DiskPressure": "KubeletHasNoDiskPressure",
                     "PIDPressure": "KubeletHasSufficientPID"}
_OS_IMAGES = {Flavor.NODEADM: "Amazon Linux 2023", Flavor.BOOTSTRAP_SH: "Amazon Linux 2",
              Flavor.BOTTLEROCKET: "Bottlerocket OS 1.20.0 (aws-k8s-1.32)"}


def provider_id(zone: str, instance_id: str) -> str:
    return f"aws:///{zone}/{instance_id}"


def micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Kubelets:
    """Every simulated node's kubelet. `stop(name)` is the instance going away: no more heartbeats."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._stopped: set[str] = set()
        # The hardware of each instance type as EC2 describes it (filled outside the store lock by the EC2 world,
        # simulator/ec2.py `_read_machines`): what a kubelet finds on the machine it boots on, for any type.
        self.machines: dict[str, Machine] = {}
        self.arches: dict[str, str] = {}

    def machine(self, itype: str) -> Machine:
        known = self.machines.get(itype)
        if known is not None:
            return known
        it = self.world.catalog.get(itype)
        if it is None:
            return Machine(cpu=2.0, memory=8 * 2**30, ephemeral_storage=20 * 2**30, eni_pods=110)
        return Machine(cpu=it.cpu_cores, memory=it.memory_bytes, ephemeral_storage=parse_memory(it.ephemeral_storage),
                       eni_pods=it.pods)

    def node_for(self, inst: dict[str, Any], boot: Bootstrap | None) -> dict[str, Any]:
        """The Node the kubelet registers for `inst`; `boot` None is an AMI's baked-in bootstrap (no flags)."""
        iid, itype = inst["InstanceId"], inst.get("InstanceType", "")
        zone = (inst.get("Placement") or {}).get("AvailabilityZone", "us-east-1a")
        name = inst.get("PrivateDnsName") or f"ip-{iid}.ec2.internal"
        ip = inst.get("PrivateIpAddress", "")
        it = self.world.catalog.get(itype)
        arch = self.arches.get(itype) or (it.arch if it else "amd64")
        flavor = boot.flavor if boot else Flavor.NODEADM
        capacity, allocatable = node_resources(self.machine(itype), boot.kubelet if boot else {},
                                               reserve_for_config_pods=flavor is Flavor.BOTTLEROCKET)
        labels = dict(boot.labels) if boot else {}
        labels.update({L.HOSTNAME_LABEL: name, L.OS_LABEL: "linux", L.ARCH_LABEL: arch,
                       "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": arch})
        taints = [*(deep_copy(t) for t in (boot.taints if boot else [])), dict(UNINITIALIZED_TAINT)]
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip, "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {"providerID": provider_id(zone, iid), "taints": taints},
            "status": {
                "capacity": capacity, "allocatable": allocatable,
                "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name},
                              {"type": "InternalDNS", "address": name}],
                "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "architecture": arch, "operatingSystem": "linux",
                             "containerRuntimeVersion": "containerd://1.7.0", "osImage": _OS_IMAGES[flavor],
                             "kernelVersion": "6.1.0", "machineID": iid, "systemUUID": iid, "bootID": iid,
                             "kubeProxyVersion": KUBELET_VERSION},
            },
        }
        for ctype, reason in _PRESSURE_REASONS.items():
            set_condition(node, ctype, "False", reason)
        set_condition(node, "Ready", "False", "KubeletNotReady", "container runtime network not ready")
        return node

    def register(self, inst: dict[str, Any], boot: Bootstrap | None) -> str | None:
        """Create the Node (unless one of that name exists); returns its name when created."""
        world = self.world
        node = self.node_for(inst, boot)
        name = meta(node)["name"]
        if world.store.get(NODES, "", name) is not None:
            return None
        stored = world.store.create(NODES, node)
        self._renew_lease(name, meta(stored)["uid"])
        if inst.get("InstanceType", "") not in world.never_ready_types:
            world.after(world.jittered(world.ready_delay), lambda: self._ready(name))
        return name

    def _ready(self, name: str) -> None:
        node = self.world.store.get(NODES, "", name)
        if node is None or is_deleting(node) or node_ready(node) or name in self._stopped:
            return
        new = deep_copy(node)
        set_condition(new, "Ready", "True", "KubeletReady", "kubelet is posting ready status")
        self.world.store.replace(NODES, new)

    def stop(self, name: str) -> None:
        self._stopped.add(name)

    def _renew_lease(self, name: str, node_uid: str) -> None:
        """Create or renew the node's Lease, then come back after the renew interval while the kubelet runs."""
        world = self.world
        node = world.store.get(NODES, "", name)
        if node is None or meta(node).get("uid") != node_uid or name in self._stopped:
            return
        lease = world.store.get(LEASES, LEASE_NAMESPACE, name)
        spec = {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "renewTime": micro_time()}
        if lease is None:
            world.store.create(LEASES, {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": LEASE_NAMESPACE, "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}]},
                "spec": spec})
        else:
            new = deep_copy(lease)
            new["spec"] = {**(lease.get("spec") or {}), **spec}
            world.store.replace(LEASES, new)
        interval = max(LEASE_RENEW_SECONDS, LEASE_RENEW_FLOOR_REAL_SECONDS / world.time_scale)
        world.after(interval, lambda: self._renew_lease(name, node_uid))
