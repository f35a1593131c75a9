"""The EC2 side of the world (boto3 against moto_server): kubelets that register Nodes for running instances,
Karpenter's NodeClaim lifecycle (Launched, Registered, Initialized), and the cloud-controller-manager that
takes a Node away when its instance is shutting down or terminated.

boto3 calls run outside the store lock (`describe` in an executor thread); `apply` then updates the cluster.
"""

from __future__ import annotations

import os
import time
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from api import labels as L
from simulator.patch import deep_copy
from simulator.pods import is_deleting, meta, node_ready
from simulator.resources import BY_KIND, ResourceType

if TYPE_CHECKING:
    from simulator.world import World

NODES = BY_KIND["Node"]
NODECLAIMS = BY_KIND["NodeClaim"]
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
NODEPOOL_TAG = "karpenter.sh/nodepool"
GONE_STATES = frozenset({"shutting-down", "terminated", "stopping", "stopped"})
LISTED_STATES = ("pending", "running", "shutting-down", "stopping", "stopped")  # all but terminated
KUBELET_VERSION = "v1.32.0"
DEFAULT_AMI = "ami-0a1b2c3d4e5f60718"


def provider_id(zone: str, instance_id: str) -> str:
    return f"aws:///{zone}/{instance_id}"


def instance_id_of(pid: str | None) -> str | None:
    if not pid or not pid.startswith("aws://"):
        return None
    return pid.rsplit("/", 1)[-1] or None


class Ec2World:
    """Follows EC2 instances tagged `karpenter.sh/nodeclaim` and plays kubelet + CCM + NodeClaim lifecycle.

    Only instances whose NodeClaim exists in this cluster join it, so simulators sharing one moto_server
    (tests) do not pick up each other's instances.
    """

    def __init__(self, world: World, endpoint: str, region: str = "us-east-1", client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client(
                "ec2", endpoint_url=endpoint, region_name=region,
                aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
                aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"))
        self.client = client
        self.world = world
        self.first_running: dict[str, float] = {}
        self.registered: set[str] = set()  # instances that have (or had) a Node
        self.gone_handled: set[str] = set()
        self.counts: Counter[str] = Counter()
        self._image_id: str | None = None
        self._known: dict[str, dict[str, Any]] = {}  # not terminated, as last described
        self._ended: dict[str, dict[str, Any]] = {}  # seen terminated (or gone from the listing)

    # ---- boto3 side --------------------------------------------------------------------------------------
    def describe(self) -> list[dict[str, Any]]:
        """Every instance as DescribeInstances shows it, read incrementally (docs/decisions.md §17).

        States come from DescribeInstanceStatus, which costs moto ~0.7 ms an instance against ~5-10 ms for a
        full description (1,000 instances: 0.7 s against 4.5-10 s a poll); an instance is described in full
        when first seen, when its state changes, and while it carries no NodeClaim tag (the simulator's own
        scenario instances are tagged after launch). A known instance missing from the live listing has been
        terminated: it is kept with that state, as moto (and EC2 for an hour) keeps terminated instances.
        """
        states: dict[str, str] = {}
        for page in self.client.get_paginator("describe_instance_status").paginate(
                IncludeAllInstances=True, Filters=[{"Name": "instance-state-name", "Values": list(LISTED_STATES)}]):
            for status in page.get("InstanceStatuses", []):
                states[status["InstanceId"]] = status["InstanceState"]["Name"]
        stale = [iid for iid, state in states.items() if self._needs_description(iid, state)]
        for inst in self._describe_ids(stale):
            self._known[inst["InstanceId"]] = inst
        for iid in [iid for iid in self._known if iid not in states]:
            ended = self._known.pop(iid)
            self._ended[iid] = {**ended, "State": {"Code": 48, "Name": "terminated"}}
        live = [{**inst, "State": {**inst.get("State", {}), "Name": states[iid]}}
                for iid, inst in self._known.items() if iid in states]
        return live + list(self._ended.values())

    def _needs_description(self, iid: str, state: str) -> bool:
        known = self._known.get(iid)
        if known is None:
            return True
        if (known.get("State") or {}).get("Name") != state:
            return True
        return not any(t.get("Key") == NODECLAIM_TAG for t in known.get("Tags") or [])

    def _describe_ids(self, ids: list[str]) -> list[dict[str, Any]]:
        """Full descriptions of `ids`, 200 to a call; ids moto no longer knows (a restarted moto) are skipped."""
        from botocore.exceptions import ClientError

        out: list[dict[str, Any]] = []
        for start in range(0, len(ids), 200):
            chunk = ids[start:start + 200]
            try:
                pages = [self.client.describe_instances(InstanceIds=chunk)]
            except ClientError:
                pages = []
                for iid in chunk:
                    try:
                        pages.append(self.client.describe_instances(InstanceIds=[iid]))
                    except ClientError:
                        continue
            out.extend(i for page in pages for res in page.get("Reservations", []) for i in res.get("Instances", []))
        return out

    def image_id(self) -> str:
        """The AMI scenario instances launch from (moto accepts any id; listing its images takes seconds)."""
        if self._image_id is None:
            self._image_id = os.environ.get("NODEFLOW_SIM_AMI", DEFAULT_AMI)
        return self._image_id

    def adopt(self, items: list[tuple[ResourceType, dict[str, Any]]]) -> None:
        """Give every scenario Node (and Node-less NodeClaim) a real instance and rewrite providerIDs to it."""
        claims_by_node: dict[str, dict[str, Any]] = {}
        claims_by_pid: dict[str, dict[str, Any]] = {}
        claims: list[dict[str, Any]] = []
        for rt, obj in items:
            if rt is NODECLAIMS:
                claims.append(obj)
                status = obj.get("status") or {}
                if status.get("nodeName"):
                    claims_by_node[status["nodeName"]] = obj
                if status.get("providerID"):
                    claims_by_pid[status["providerID"]] = obj
        groups: dict[tuple[str, str, str], list[tuple[dict[str, Any] | None, dict[str, Any] | None]]] = defaultdict(
            list)
        claimed: set[int] = set()
        for rt, obj in items:
            if rt is not NODES:
                continue
            labels = meta(obj).get("labels") or {}
            claim = claims_by_node.get(meta(obj)["name"]) or claims_by_pid.get((obj.get("spec") or {}).get(
                "providerID", ""))
            if claim is not None:
                claimed.add(id(claim))
            key = (labels.get(L.INSTANCE_TYPE_LABEL, "m5.large"), labels.get(L.ZONE_LABEL, "us-east-1a"),
                   labels.get(L.CAPACITY_TYPE_LABEL, L.CAPACITY_ON_DEMAND))
            groups[key].append((obj, claim))
        for claim in claims:
            if id(claim) not in claimed:
                labels = meta(claim).get("labels") or {}
                key = (labels.get(L.INSTANCE_TYPE_LABEL, "m5.large"), labels.get(L.ZONE_LABEL, "us-east-1a"),
                       labels.get(L.CAPACITY_TYPE_LABEL, L.CAPACITY_ON_DEMAND))
                groups[key].append((None, claim))
        for (itype, zone, cap), members in groups.items():
            for start in range(0, len(members), 500):
                batch = members[start:start + 500]
                ids = self._launch(itype, zone, cap, len(batch))
                for (node, claim), iid in zip(batch, ids, strict=True):
                    pid = provider_id(zone, iid)
                    pool = ((node or claim or {}).get("metadata", {}).get("labels") or {}).get(L.NODEPOOL_LABEL, "")
                    tags = [{"Key": NODEPOOL_TAG, "Value": pool}, {"Key": L.CAPACITY_TYPE_LABEL, "Value": cap}]
                    if claim is not None:
                        tags.append({"Key": NODECLAIM_TAG, "Value": meta(claim)["name"]})
                        claim.setdefault("status", {})["providerID"] = pid
                    if node is not None:
                        tags.append({"Key": "Name", "Value": meta(node)["name"]})
                        node.setdefault("spec", {})["providerID"] = pid
                        self.registered.add(iid)
                    self.client.create_tags(Resources=[iid], Tags=tags)

    def _launch(self, itype: str, zone: str, cap: str, count: int) -> list[str]:
        kwargs: dict[str, Any] = dict(ImageId=self.image_id(), InstanceType=itype, MinCount=count, MaxCount=count,
                                      Placement={"AvailabilityZone": zone})
        if cap == L.CAPACITY_SPOT:
            kwargs["InstanceMarketOptions"] = {"MarketType": "spot"}
        resp = self.client.run_instances(**kwargs)
        return [i["InstanceId"] for i in resp["Instances"]]

    # ---- cluster side ------------------------------------------------------------------------------------
    def instance_counts(self) -> dict[str, int]:
        return dict(self.counts)

    def apply(self, instances: list[dict[str, Any]]) -> None:
        world = self.world
        with world.store.lock:
            ours = [i for i in instances if i["InstanceId"] in self.registered or world.store.get(
                NODECLAIMS, "", {t["Key"]: t["Value"] for t in i.get("Tags", []) or []}.get(NODECLAIM_TAG, ""))]
            self.counts = Counter(i.get("State", {}).get("Name", "unknown") for i in ours)
            nodes_by_iid: dict[str, dict[str, Any]] = {}
            for node in world.store.list(NODES):
                iid = instance_id_of((node.get("spec") or {}).get("providerID"))
                if iid:
                    nodes_by_iid[iid] = node
            now = time.monotonic()
            for inst in instances:
                iid = inst["InstanceId"]
                state = inst.get("State", {}).get("Name", "")
                tags = {t["Key"]: t["Value"] for t in inst.get("Tags", []) or []}
                node = nodes_by_iid.get(iid)
                if state == "running":
                    claim = world.store.get(NODECLAIMS, "", tags.get(NODECLAIM_TAG, ""))
                    if claim is None:
                        continue  # not this cluster's instance (Karpenter would garbage-collect it)
                    bound = (claim.get("status") or {}).get("providerID")
                    if bound and instance_id_of(bound) != iid:
                        # A NodeClaim is bound to one instance. Another running instance tagged with its name
                        # (an earlier cluster's on the same moto, since claim names repeat) is not this one's:
                        # joining it re-pointed the claim at a stranger's Node and stalled the e2e drift rollout.
                        continue
                    if not bound:
                        self._launched(claim, inst)
                    if node is None and iid not in self.registered:
                        started = self.first_running.setdefault(iid, now)
                        if now - started >= world.ready_delay * world.time_scale:
                            self._register(inst, tags)
                elif state in GONE_STATES and node is not None and iid not in self.gone_handled:
                    self.gone_handled.add(iid)
                    self._instance_gone(meta(node)["name"])

    def _zone(self, inst: dict[str, Any]) -> str:
        return (inst.get("Placement") or {}).get("AvailabilityZone", "us-east-1a")

    def _capacity_type(self, inst: dict[str, Any], tags: dict[str, str]) -> str:
        if inst.get("InstanceLifecycle") == "spot":
            return L.CAPACITY_SPOT
        return tags.get(L.CAPACITY_TYPE_LABEL, L.CAPACITY_ON_DEMAND)

    def _resources(self, itype: str) -> dict[str, str]:
        it = self.world.catalog.get(itype)
        if it is None:
            return {"cpu": "2", "memory": "8Gi", "pods": "110", "ephemeral-storage": "20Gi"}
        return {"cpu": it.cpu, "memory": it.memory, "pods": str(it.pods), "ephemeral-storage": it.ephemeral_storage}

    def _launched(self, claim: dict[str, Any], inst: dict[str, Any]) -> None:
        from simulator.world import set_condition

        new = deep_copy(claim)
        status = new.setdefault("status", {})
        status["providerID"] = provider_id(self._zone(inst), inst["InstanceId"])
        status["imageID"] = inst.get("ImageId", "")
        res = self._resources(inst.get("InstanceType", ""))
        status["capacity"] = dict(res)
        status["allocatable"] = dict(res)
        set_condition(new, "Launched", "True", "Launched")
        self.world.store.replace(NODECLAIMS, new)

    def _register(self, inst: dict[str, Any], tags: dict[str, str]) -> None:
        """The kubelet joins: a NotReady Node for the instance; it turns Ready after a further ready delay."""
        from simulator.world import set_condition

        world = self.world
        iid, itype, zone = inst["InstanceId"], inst.get("InstanceType", ""), self._zone(inst)
        name = inst.get("PrivateDnsName") or f"ip-{iid}.ec2.internal"
        self.registered.add(iid)
        claim = world.store.get(NODECLAIMS, "", tags[NODECLAIM_TAG])
        it = world.catalog.get(itype)
        labels = dict((meta(claim).get("labels") or {}) if claim else {})
        labels.update({
            L.INSTANCE_TYPE_LABEL: itype, "beta.kubernetes.io/instance-type": itype,
            L.ZONE_LABEL: zone, "topology.kubernetes.io/region": zone[:-1],
            L.CAPACITY_TYPE_LABEL: self._capacity_type(inst, tags),
            L.ARCH_LABEL: it.arch if it else "amd64", L.OS_LABEL: "linux",
            L.HOSTNAME_LABEL: name, L.REGISTERED_LABEL: "true",
        })
        pool = tags.get(NODEPOOL_TAG) or labels.get(L.NODEPOOL_LABEL)
        if pool:
            labels[L.NODEPOOL_LABEL] = pool
        res = self._resources(itype)
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "finalizers": [L.TERMINATION_FINALIZER],
                         "annotations": {"alpha.kubernetes.io/provided-node-ip": inst.get("PrivateIpAddress", "")}},
            "spec": {"providerID": provider_id(zone, iid)},
            "status": {
                "capacity": dict(res), "allocatable": dict(res),
                "addresses": [{"type": "InternalIP", "address": inst.get("PrivateIpAddress", "")},
                              {"type": "Hostname", "address": name}, {"type": "InternalDNS", "address": name}],
                "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "architecture": labels[L.ARCH_LABEL],
                             "operatingSystem": "linux", "containerRuntimeVersion": "containerd://1.7.0",
                             "osImage": "Amazon Linux 2023", "kernelVersion": "6.1.0", "machineID": iid,
                             "systemUUID": iid, "bootID": iid, "kubeProxyVersion": KUBELET_VERSION},
            },
        }
        set_condition(node, "Ready", "False", "KubeletNotReady", "container runtime network not ready")
        if claim is not None:
            node["metadata"]["ownerReferences"] = [{
                "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": meta(claim)["name"],
                "uid": meta(claim)["uid"], "blockOwnerDeletion": True}]
            taints = [deep_copy(t) for t in (claim.get("spec") or {}).get("taints") or []]
            if taints:
                node["spec"]["taints"] = taints
        if world.store.get(NODES, "", name) is not None:
            return
        world.store.create(NODES, node)
        if claim is not None:
            new = deep_copy(claim)
            status = new.setdefault("status", {})
            status.update(nodeName=name, providerID=provider_id(zone, iid))
            status.setdefault("capacity", dict(res))
            status.setdefault("allocatable", dict(res))
            set_condition(new, "Launched", "True", "Launched")
            set_condition(new, "Registered", "True", "Registered")
            world.store.replace(NODECLAIMS, new)
        if itype not in world.never_ready_types:
            world.after(world.ready_delay, lambda: self._ready(name))

    def _ready(self, name: str) -> None:
        from simulator.world import set_condition

        world = self.world
        node = world.store.get(NODES, "", name)
        if node is None or is_deleting(node) or node_ready(node):
            return
        itype = (meta(node).get("labels") or {}).get(L.INSTANCE_TYPE_LABEL, "")
        if itype in world.never_ready_types:
            return
        new = deep_copy(node)
        set_condition(new, "Ready", "True", "KubeletReady", "kubelet is posting ready status")
        new["metadata"]["labels"][L.INITIALIZED_LABEL] = "true"
        world.store.replace(NODES, new)
        for ref in meta(node).get("ownerReferences") or []:
            if ref.get("kind") != "NodeClaim":
                continue
            claim = world.store.get(NODECLAIMS, "", ref.get("name", ""))
            if claim is None:
                continue
            updated = deep_copy(claim)
            set_condition(updated, "Initialized", "True", "Initialized")
            set_condition(updated, "Ready", "True", "Ready")
            world.store.replace(NODECLAIMS, updated)

    def _instance_gone(self, node_name: str) -> None:
        """Instance stopping / terminated: the Node goes NotReady, then the CCM deletes it (finalizers hold it)."""
        from simulator.world import set_condition

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



class _HttpStatus:
    """The part of a botocore HTTP response the client reads when a before-call hook answers instead of EC2."""

    status_code = 400
    headers: dict[str, str] = {}


class IceInjector:
    """Makes RunInstances answer InsufficientInstanceCapacity for chosen (instance type, zone) pairs, as EC2 does
    when a pool is out of capacity; moto never does. Installed on the launcher's boto3 EC2 client (a botocore
    `before-call` hook answers before any request is sent), so a test can prove a launch falls back."""

    def __init__(self) -> None:
        self.unavailable: set[tuple[str, str]] = set()  # (type, zone); zone "*" means every zone
        self.refused: list[tuple[str, str]] = []

    def exhaust(self, itype: str, zone: str = "*") -> None:
        self.unavailable.add((itype, zone))

    def restore(self) -> None:
        self.unavailable.clear()

    def install(self, client: Any) -> IceInjector:
        client.meta.events.register("before-call.ec2.RunInstances", self._before_call)
        return self

    def _before_call(self, params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]] | None:
        body = params.get("body") or {}
        itype, zone = body.get("InstanceType", ""), body.get("Placement.AvailabilityZone", "")
        if (itype, zone) not in self.unavailable and (itype, "*") not in self.unavailable:
            return None
        self.refused.append((itype, zone))
        message = (f"We currently do not have sufficient {itype} capacity in the Availability Zone you requested "
                   f"({zone}).")
        return _HttpStatus(), {"Error": {"Code": "InsufficientInstanceCapacity", "Message": message},
                               "ResponseMetadata": {"HTTPStatusCode": 400}}
