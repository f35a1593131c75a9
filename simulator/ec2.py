"""The EC2 side of the world (boto3 against moto_server): which instances are this cluster's nodes, their
kubelets (simulator/kubelet.py) and the cloud controller manager (simulator/ccm.py).

A running instance joins when its user data's bootstrap names this cluster (simulator/user_data.py,
simulator/membership.py); one launched without user data joins when this cluster has the NodeClaim its
`karpenter.sh/nodeclaim` tag names (a stand-in for an AMI with a baked-in bootstrap). The world never writes a
NodeClaim nor anything on a Node that only Karpenter's controllers write (docs/architecture.md, "Simulated
kubelets and CCM").

boto3 calls run outside the store lock (`describe` in an executor thread); `apply` then updates the cluster.
"""

from __future__ import annotations

import os
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from api import labels as L
from simulator.ccm import CloudControllerManager
from simulator.ice import IceInjector
from simulator.kubelet import KUBELET_VERSION, Kubelets, provider_id
from simulator.kubelet_resources import Machine
from simulator.membership import ClusterIdentity
from simulator.pods import meta
from simulator.resources import BY_KIND, ResourceType
from simulator.user_data import Bootstrap, decode, parse

if TYPE_CHECKING:
    from simulator.world import World

__all__ = ["DEFAULT_AMI", "KUBELET_VERSION", "Ec2World", "IceInjector", "instance_id_of", "provider_id"]

NODES = BY_KIND["Node"]
NODECLAIMS = BY_KIND["NodeClaim"]
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
NODEPOOL_TAG = "karpenter.sh/nodepool"
GONE_STATES = frozenset({"shutting-down", "terminated", "stopping", "stopped"})
LISTED_STATES = ("pending", "running", "shutting-down", "stopping", "stopped")  # all but terminated
DEFAULT_AMI = "ami-0a1b2c3d4e5f60718"
# moto reports LaunchTime to the second: an instance launched in the second this world started is not older.
_LAUNCH_SLACK = timedelta(seconds=2)


_LAUNCH_TIME_PRECISION = 1.0
UNLISTED_ASK_SECONDS = 1.0  # wall seconds between descriptions of Nodes' instances no listing shows


def _launch_time(inst: dict[str, Any]) -> datetime | None:
    launched = inst.get("LaunchTime")
    if isinstance(launched, str):
        launched = datetime.fromisoformat(launched.replace("Z", "+00:00"))
    if not isinstance(launched, datetime):
        return None
    return launched if launched.tzinfo is not None else launched.replace(tzinfo=UTC)


def instance_id_of(pid: str | None) -> str | None:
    if not pid or not pid.startswith("aws://"):
        return None
    return pid.rsplit("/", 1)[-1] or None


class Ec2World:
    """Follows EC2 instances and plays the kubelets and the CCM of those that are this cluster's nodes.

    Instances launched before this world started are never its members (other than those `adopt` launched):
    simulators sharing one moto_server (tests) could otherwise reuse a port an earlier one's instances name.
    """

    def __init__(self, world: World, endpoint: str, region: str = "us-east-1", client: Any = None,
                 cluster_name: str | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client(
                "ec2", endpoint_url=endpoint, region_name=region,
                aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
                aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"))
        self.client = client
        self.world = world
        self.identity = ClusterIdentity(name=cluster_name)  # the server sets identity.url once it listens
        self.kubelets = Kubelets(world)
        self._no_machine: set[str] = set()
        self.ccm = CloudControllerManager(world)
        self.started_at = datetime.now(UTC)
        self.first_running: dict[str, float] = {}
        self.registered: set[str] = set()  # instances that have (or had) a Node
        self.gone_handled: set[str] = set()
        self.counts: Counter[str] = Counter()
        self._image_id: str | None = None
        self._known: dict[str, dict[str, Any]] = {}  # not terminated, as last described
        self._ended: dict[str, dict[str, Any]] = {}  # seen terminated (or gone from the listing)
        self._bootstraps: dict[str, tuple[bool, Bootstrap | None]] = {}  # iid -> (has user data, its bootstrap)
        self._named: dict[str, bool] = {}  # iid -> its bootstrap names this cluster
        self._unlisted: set[str] = set()  # Nodes' instances the last round neither listed nor knew ended
        self._unlisted_asked = 0.0  # monotonic time they were last described

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
        if not self.ccm.zone_ids:
            self.ccm.zone_ids = self._zone_ids()
        described = self._describe_ids(stale)
        for inst in described:
            self._known[inst["InstanceId"]] = inst
        self._read_user_data(described)
        self._read_machines(described)
        self._end_unlisted(states)
        for iid in [iid for iid in self._known if iid not in states]:
            ended = self._known.pop(iid)
            self._ended[iid] = {**ended, "State": {"Code": 48, "Name": "terminated"}}
        live = [{**inst, "State": {**inst.get("State", {}), "Name": states[iid]}}
                for iid, inst in self._known.items() if iid in states]
        return live + list(self._ended.values())

    def _end_unlisted(self, states: dict[str, str]) -> None:
        """Describe by id the instances of Nodes that no listing showed, and keep those terminated as ended.

        The CCM asks EC2 after every Node's instance, not only after those it once saw running: an instance
        terminated between its launch and the first poll that would have listed it (a test that terminates a
        scenario node's instance at once) must still take its Node down. Live ones wait for the next listing; an
        id EC2 does not know (a Node with a made-up providerID) is asked again, at most every UNLISTED_ASK_SECONDS.
        """
        ids = sorted(self._unlisted - set(states) - set(self._known) - set(self._ended))
        self._unlisted = set()
        if not ids or time.monotonic() - self._unlisted_asked < UNLISTED_ASK_SECONDS:
            return
        self._unlisted_asked = time.monotonic()
        for inst in self._describe_ids(ids):
            if (inst.get("State") or {}).get("Name") == "terminated":
                self._ended[inst["InstanceId"]] = inst

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

    def _read_machines(self, instances: list[dict[str, Any]]) -> None:
        """The hardware of instance types not seen before, from DescribeInstanceTypes (vCPUs, memory, the
        ENI-limited pod count, architecture), so a kubelet on any type reports what its machine has."""
        from botocore.exceptions import ClientError

        new = sorted({str(i.get("InstanceType")) for i in instances if i.get("InstanceType")}
                     - set(self.kubelets.machines) - self._no_machine)
        for start in range(0, len(new), 100):
            chunk = new[start:start + 100]
            try:
                found = self.client.describe_instance_types(InstanceTypes=chunk).get("InstanceTypes", [])
            except ClientError:
                self._no_machine.update(chunk)  # a type EC2 does not describe: the catalog (or defaults) speak
                continue
            for t in found:
                name = t["InstanceType"]
                net = t.get("NetworkInfo") or {}
                enis, ips = net.get("MaximumNetworkInterfaces", 3), net.get("Ipv4AddressesPerInterface", 10)
                self.kubelets.machines[name] = Machine(
                    cpu=float((t.get("VCpuInfo") or {}).get("DefaultVCpus", 2)),
                    memory=int((t.get("MemoryInfo") or {}).get("SizeInMiB", 8192)) * 2**20,
                    ephemeral_storage=20 * 2**30, eni_pods=enis * (ips - 1) + 2)
                arches = (t.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ["x86_64"]
                self.kubelets.arches[name] = "arm64" if "arm64" in arches else "amd64"

    def _read_user_data(self, instances: list[dict[str, Any]]) -> None:
        """Each new instance's user data, once (it cannot change while the instance runs); only instances
        launched since this world started can be members, so older ones are not read."""
        from botocore.exceptions import ClientError

        for inst in instances:
            iid = inst["InstanceId"]
            if iid in self._bootstraps or iid in self.registered or not self._launched_since_start(inst):
                continue
            try:
                attr = self.client.describe_instance_attribute(InstanceId=iid, Attribute="userData")
            except ClientError:
                continue  # gone from moto; read again if it shows up
            raw = (attr.get("UserData") or {}).get("Value")
            self._bootstraps[iid] = (bool(raw), parse(decode(raw)) if raw else None)

    def _zone_ids(self) -> dict[str, str]:
        """Zone name -> zone id, for the CCM's topology.k8s.aws/zone-id label (empty if EC2 will not say)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            zones = self.client.describe_availability_zones().get("AvailabilityZones", [])
        except (BotoCoreError, ClientError):
            return {}
        return {z["ZoneName"]: z["ZoneId"] for z in zones if z.get("ZoneName") and z.get("ZoneId")}

    def _launched_since_start(self, inst: dict[str, Any]) -> bool:
        launched = _launch_time(inst)
        return launched is None or launched >= self.started_at - _LAUNCH_SLACK

    def _boot_started(self, inst: dict[str, Any], now: float) -> float:
        """When the instance began to boot, on the monotonic clock: its launch, as a real kubelet's boot does not
        wait for anyone to look. A poll that reads hundreds of new instances can take tens of seconds under load;
        counting the boot from when the poll first saw the instance running added that to every registration.
        Never before the launch: moto's LaunchTime is truncated to the second, so a second is taken off the age."""
        launched = _launch_time(inst)
        if launched is None:
            return now
        age = (datetime.now(UTC) - launched).total_seconds() - _LAUNCH_TIME_PRECISION
        return now - max(0.0, age)

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

    def is_member(self, inst: dict[str, Any]) -> bool:
        """Whether `inst` is one of this cluster's nodes (see the module docstring)."""
        iid = inst["InstanceId"]
        if iid in self.registered:
            return True
        if not self._launched_since_start(inst):
            return False
        has_user_data, boot = self._bootstraps.get(iid, (None, None))
        if has_user_data is None:
            return False  # user data not read yet
        if has_user_data:
            if iid not in self._named:
                self._named[iid] = boot is not None and self.identity.named_by(boot)
            return self._named[iid]
        return self._claim_admits(inst)

    def _claim_admits(self, inst: dict[str, Any]) -> bool:
        """The stand-in for instances without user data: this cluster has the NodeClaim the tag names, and the
        claim is not bound (status.providerID) to another instance. Claim names repeat across clusters sharing
        one moto (old-0 in many tests): a stranger tagged with a bound claim's name must not join."""
        tags = {t["Key"]: t["Value"] for t in inst.get("Tags", []) or []}
        claim = self.world.store.get(NODECLAIMS, "", tags.get(NODECLAIM_TAG, ""))
        if claim is None:
            return False
        bound = (claim.get("status") or {}).get("providerID")
        return not bound or instance_id_of(bound) == inst["InstanceId"]

    def apply(self, instances: list[dict[str, Any]]) -> None:
        """One round of kubelets and CCM over the described instances."""
        world = self.world
        with world.store.lock:
            nodes_by_iid: dict[str, dict[str, Any]] = {}
            for node in world.store.list(NODES):
                iid = instance_id_of((node.get("spec") or {}).get("providerID"))
                if iid:
                    nodes_by_iid[iid] = node
            counts: Counter[str] = Counter()
            now = time.monotonic()
            for inst in instances:
                iid = inst["InstanceId"]
                state = inst.get("State", {}).get("Name", "")
                node = nodes_by_iid.get(iid)
                member = self.is_member(inst)
                if member:
                    counts[state] += 1
                if state == "running" and node is not None:
                    self.ccm.initialize(node, inst)
                elif state == "running" and member and iid not in self.registered:
                    started = self.first_running.setdefault(iid, self._boot_started(inst, now))
                    if now - started >= world.ready_delay * world.time_scale:  # the instance boots
                        self.registered.add(iid)
                        self.kubelets.register(inst, self._bootstraps.get(iid, (False, None))[1])
                elif state in GONE_STATES and node is not None and iid not in self.gone_handled:
                    self.gone_handled.add(iid)
                    self.kubelets.stop(meta(node)["name"])
                    self.ccm.instance_gone(meta(node)["name"])
            self.counts = counts
            self._unlisted = set(nodes_by_iid) - {inst["InstanceId"] for inst in instances}
