"""Garbage collection of instances and NodeClaims that lost each other (Karpenter's nodeclaim/garbagecollection,
core and AWS; docs/decisions.md §19).

- An instance tagged for this cluster (`eks:eks-cluster-name=<cluster>`, with a `karpenter.sh/nodepool` tag)
  that no NodeClaim accounts for is terminated once 30 s old, and any Node of it deleted. Other clusters'
  instances are never listed. Without a cluster name (`--cluster-name`) this half is off: nothing tells this
  cluster's instances from another's. The watch cache only proposes an orphan: the API server must not show
  its claim either (one GET per instance proposed).
- A registered NodeClaim whose instance is gone (not found, or shutting down / terminated) is deleted unless its
  Node is still Ready; its termination then removes the finalizers.

Runs every 10 s for the first 20 passes, then every 2 min, as Karpenter's AWS collector does. Every call is
idempotent: TerminateInstances on a terminated instance and DELETE on a deleting claim change nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from api import labels as L
from api.nodeclass_launch import EKS_CLUSTER_TAG
from api.provider_id import instance_id_from_provider_id
from gateways.ec2 import CloudProvider, cloud_provider
from gateways.kube import KubeClient, Obj, node_ready
from planning.lifecycle import drain, garbage
from runtime.cluster_cache import ClusterCache
from telemetry import karpenter_metrics as km
from telemetry import metrics

log = logging.getLogger(__name__)


@dataclass
class GcSettings:
    fast_seconds: float = 10.0
    fast_passes: int = 20
    slow_seconds: float = 120.0
    instance_grace_seconds: float = garbage.INSTANCE_GRACE.total_seconds()


@dataclass
class GcResult:
    instances_terminated: list[str] = field(default_factory=list)
    instances_kept: list[str] = field(default_factory=list)  # proposed by the cache, their claims in the API server
    claims_deleted: list[str] = field(default_factory=list)


def _objs(cache: ClusterCache, kind: str) -> list[Obj]:
    inf = cache.informers.get(kind)
    return inf.objects() if inf is not None else []


class GarbageCollector:
    def __init__(self, kube: KubeClient, cache: ClusterCache, ec2: CloudProvider | Any, cluster_name: str | None,
                 settings: GcSettings | None = None, clock: Callable[[], datetime] | None = None) -> None:
        self.kube, self.cache, self.ec2, self.cluster_name = kube, cache, cloud_provider(ec2), cluster_name
        self.settings = settings or GcSettings()
        self.clock = clock or (lambda: datetime.now(UTC))
        self.passes = 0
        self._stopping = asyncio.Event()
        if not cluster_name:
            log.warning("instance garbage collection is off: no cluster name (--cluster-name) tells this "
                        "cluster's instances from another's; NodeClaims whose instance is gone are still collected")

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        await asyncio.to_thread(self.cache.wait_synced, 60.0)
        while not self._stopping.is_set():
            try:
                with km.reconcile("nodeclaim.garbagecollection"):  # controller_runtime_reconcile_*
                    await asyncio.to_thread(self.collect)
            except Exception as exc:
                log.warning("garbage collection pass failed: %s", exc)
            s = self.settings
            every = s.fast_seconds if self.passes < s.fast_passes else s.slow_seconds
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=every)

    def collect(self) -> GcResult:
        """One pass (blocking: EC2 and API calls)."""
        # the instances first, then the claims: a claim created while a long listing ran is seen, not taken for
        # missing (1,000 instances took moto seconds to list while launches went on)
        listed = self._cluster_instances()
        claims, nodes = _objs(self.cache, "NodeClaim"), _objs(self.cache, "Node")
        result = GcResult()
        grace = timedelta(seconds=self.settings.instance_grace_seconds)
        for inst in garbage.orphan_instances(listed, claims, self.clock(), grace):
            if self._claimed_in_api(inst):
                result.instances_kept.append(str(inst["InstanceId"]))
                continue
            self._terminate_orphan(inst, nodes)
            result.instances_terminated.append(str(inst["InstanceId"]))
        if result.instances_kept:
            log.warning("garbage collection: %d instances' NodeClaims are not in the watch cache yet (the API server "
                        "shows them); not collected", len(result.instances_kept))
        live = {str(i["InstanceId"]) for i in listed if (i.get("State") or {}).get("Name") in garbage.LIVE_STATES}
        ready = {(n.get("metadata") or {}).get("name", "") for n in nodes if node_ready(n)}
        # only claims the listing leaves in doubt are asked about: a deleting claim, an unregistered one or one
        # whose Node is Ready is never collected here, so its instance is not described (each DescribeInstances
        # of 200 instances cost the worker ~0.4 s of CPU, every 10 s, for every claim of the cluster)
        suspects = garbage.claims_without_instance(claims, live, ready)
        live |= self._live_of_claims(suspects, live)
        for claim in garbage.claims_without_instance(suspects, live, ready):
            name = claim["metadata"]["name"]
            pid = (claim.get("status") or {}).get("providerID")
            log.info("nodeclaim %s: instance %s is gone, deleting the NodeClaim", name, pid, extra={"nodeclaim": name})
            if self.kube.delete_node_claim(name):
                metrics.NODECLAIMS_LIFECYCLE_DELETED.labels(reason="garbage_collected").inc()
                km.record_liveness_deleted(claim, "garbage_collected", self._reschedulable_pods(claim))
                self.kube.event("NodeClaim", claim, name, "GarbageCollected",
                                f"Instance {pid} is gone; deleting the NodeClaim")
                result.claims_deleted.append(name)
        self.passes += 1
        return result

    def _reschedulable_pods(self, claim: Obj) -> int:
        """The claim's node's pods that need a place elsewhere (Karpenter v1.15's GC counts them in
        karpenter_pods_disruption_initiated_total); a claim without a node has none, a failed list counts 0."""
        node_name = (claim.get("status") or {}).get("nodeName")
        if not node_name:
            return 0
        try:
            return sum(1 for p in self.kube.list_node_pods(node_name) if drain.is_reschedulable(p))
        except Exception as exc:  # a metric is never worth failing garbage collection over
            log.debug("reschedulable pods of %s: %s", node_name, exc)
            return 0

    def _cluster_instances(self) -> list[dict[str, Any]]:
        if not self.cluster_name:
            return []
        return self.ec2.all_instances([
            {"Name": f"tag:{EKS_CLUSTER_TAG}", "Values": [self.cluster_name]},
            {"Name": "tag-key", "Values": [L.NODEPOOL_LABEL]},
            {"Name": "instance-state-name", "Values": sorted(garbage.LIVE_STATES)}])

    def _live_of_claims(self, claims: list[Obj], known: set[str]) -> set[str]:
        """Instances of registered claims the cluster listing did not show (no cluster tag): asked by id."""
        ids = sorted({iid for c in claims if (iid := instance_id_from_provider_id(
            (c.get("status") or {}).get("providerID"))) and iid not in known})
        live: set[str] = set()
        for start in range(0, len(ids), 200):
            for inst in self._describe(ids[start:start + 200]):
                if (inst.get("State") or {}).get("Name") in garbage.LIVE_STATES:
                    live.add(str(inst["InstanceId"]))
        return live

    def _describe(self, ids: list[str]) -> list[dict[str, Any]]:
        """Instances by id; an id EC2 no longer knows is left out (asked one by one after a NotFound)."""
        try:
            return self.ec2.instances(ids=ids)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("InvalidInstanceID.NotFound",
                                                                  "InvalidInstanceID.Malformed"):
                raise
        if len(ids) == 1:
            return []
        return [i for iid in ids for i in self._describe([iid])]

    def _claimed_in_api(self, inst: dict[str, Any]) -> bool:
        """Whether the API server still shows the claim the instance's tag names, by the same rule as the cache: an
        instance is terminated only on the API server's word, never on a watch cache that lags behind it (in
        Karpenter's hostname-spreading-xl on a loaded 2-core machine, 268 nodes' instances were terminated
        while their claims existed)."""
        owner = garbage.tags_of(inst).get(L.NODECLAIM_TAG)
        claim = self.kube.get_node_claim(owner) if owner else None
        if claim is None or not garbage.claimed_by(inst, [claim]):
            return False
        log.info("instance %s: its NodeClaim %s is not in the watch cache yet; not collected", inst["InstanceId"],
                 owner, extra={"instance": inst["InstanceId"], "nodeclaim": owner})
        return True

    def _terminate_orphan(self, inst: dict[str, Any], nodes: list[Obj]) -> None:
        iid = str(inst["InstanceId"])
        log.info("instance %s has no NodeClaim, terminating it", iid, extra={"instance": iid})
        self.ec2.terminate([iid])
        metrics.INSTANCES_GARBAGE_COLLECTED.inc()
        for node in nodes:
            if instance_id_from_provider_id((node.get("spec") or {}).get("providerID")) == iid:
                name = node["metadata"]["name"]
                self.kube.event("Node", node, name, "GarbageCollected",
                                f"Instance {iid} has no NodeClaim; terminated it and deleting the Node",
                                type_="Warning")
                self.kube.delete_node(name)
