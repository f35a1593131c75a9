"""Launching and removing replacement nodes: a NodeClaim owned by its NodePool plus an EC2 instance.

Idempotent by construction: the NodeClaim name derives from the launch key (workflow id, run, index),
and CreateFleet (activities/fleet_launch.py, the default for a pool with an EC2NodeClass) or RunInstances uses a
ClientToken derived from the NodeClaim uid, so an activity retry finds the NodeClaim and the instance it already
made instead of launching twice.

The instance is shaped by the NodePool's EC2NodeClass (activities/nodeclass_launch.py): its resolved image,
subnet, security groups, instance profile, user data, disks, IMDS options and tags.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.fleet_launch import FleetLauncher
from activities.heartbeat import heartbeating
from activities.launch_templates import LaunchTemplates
from activities.nodeclass_launch import NodeClassLauncher
from activities.replacement_status import find_node, read_statuses
from activities.reservation_launch import ReservationBook
from api import labels
from api.allocatable import VM_MEMORY_OVERHEAD_PERCENT
from api.capacity_reservations import CAPACITY_RESERVED
from api.catalog import InstanceTypeCatalog, Offering, current_catalog
from api.ec2nodeclass import EC2NodeClass
from api.events import EventReason
from api.labels import NODECLAIM_TAG, NODECLAIM_UID_TAG, NODEPOOL_TAG
from api.node_overlay import load_node_overlay
from api.nodeclass_launch import ClusterInfo, cluster_tags, instance_tags, subnet_zones
from api.nodepool import load_nodepool
from api.policy_controls import SPOT_FALLBACK_ANNOTATION
from contracts.disruption import (
    LaunchedReplacement,
    LaunchInput,
    Replacement,
    ReplacementStatus,
    StatusInput,
)
from contracts.errors import ErrorType
from gateways.ec2 import CloudErrorKind, CloudProvider, FleetCloud, classify, cloud_provider, error_code, iam_action
from gateways.kube import KubeClient, Obj, event_body
from planning.cluster import type_labels
from planning.lifecycle.launch import launch_patch
from planning.pricing.overlays import pool_catalog
from planning.pricing.reservations import with_reservations
from planning.pricing.unavailable_offerings import ERROR_REASONS, UnavailableOfferings
from planning.provisioning.fleet import LaunchApi, reservation_template
from planning.provisioning.spot_fallback import fallback_message, fallback_value, fell_back
from planning.scheduling.min_values import RELAXED_ANNOTATION, relax_nodeclaim, relaxing
from telemetry import karpenter_metrics as km
from telemetry import metrics

MIN_VALUES_RELAXED = RELAXED_ANNOTATION  # Karpenter's annotation (v1 NodeClaim)
# EC2 errors that another attempt will not fix: roll the disruption back instead.
FATAL_EC2_ERRORS = {"InsufficientInstanceCapacity", "InvalidParameterValue", "InvalidAMIID.NotFound",
                    "InvalidAMIID.Malformed", "UnfulfillableCapacity", "MaxSpotInstanceCountExceeded"}


# EC2 errors that mean "no capacity for this offering now": the launch passes to the next offering.
ICE_ERRORS = set(ERROR_REASONS)  # InsufficientInstanceCapacity, UnfulfillableCapacity, Unsupported: marked 3 min
MAX_OFFERINGS_TRIED = 30  # RunInstances calls one launch makes at most (`--launch-api run-instances`, no class)


class _InsufficientCapacity(Exception):
    """Internal: one offering had no capacity."""


def nodeclaim_name(node_pool: str, key: str) -> str:
    """Deterministic `<pool>-<hash>` (Karpenter uses generateName `<pool>-`; we need retries to agree)."""
    return f"{node_pool}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def client_token(nodeclaim_uid: str) -> str:
    return f"nodeflow-{nodeclaim_uid}"[:64]


def narrowed_requirements(template_reqs: list[dict[str, Any]], r: Replacement) -> list[dict[str, Any]]:
    """The NodePool's requirements with instance type, capacity type (and zone) narrowed to the choice."""
    narrowed = {labels.INSTANCE_TYPE_LABEL: list(r.instance_types), labels.CAPACITY_TYPE_LABEL: [r.capacity_type]}
    if r.zone:
        narrowed[labels.ZONE_LABEL] = [r.zone]
    out = [copy.deepcopy(q) for q in template_reqs if q.get("key") not in narrowed]
    out += [copy.deepcopy(q) for q in r.requirements if q.get("key") not in narrowed]
    out += [{"key": k, "operator": "In", "values": v} for k, v in narrowed.items()]
    return out


def allowed_zones(reqs: list[dict[str, Any]]) -> set[str] | None:
    for q in reqs:
        if q.get("key") == labels.ZONE_LABEL and q.get("operator") == "In":
            return set(q.get("values") or [])
    return None


def cheapest_offering(catalog: InstanceTypeCatalog, r: Replacement,
                      zones: set[str] | None) -> tuple[str, Offering] | None:
    """The cheapest available (type, offering) among the allowed types for the chosen capacity type."""
    best: tuple[str, Offering] | None = None
    for name in r.instance_types:
        it = catalog.get(name)
        if it is None:
            continue
        off = it.cheapest(zones, {r.capacity_type})
        if off is not None and (best is None or (off.price, name) < (best[1].price, best[0])):
            best = (name, off)
    return best


def offerings_cheapest_first(catalog: InstanceTypeCatalog, r: Replacement,
                             zones: set[str] | None) -> list[tuple[str, Offering]]:
    """Every available (type, offering) of the allowed types for the chosen capacity type, cheapest first."""
    out: list[tuple[str, Offering]] = []
    for name in r.instance_types:
        it = catalog.get(name)
        if it is None:
            continue
        out += [(name, o) for o in it.offerings if o.available and o.capacity_type == r.capacity_type
                and (zones is None or o.zone in zones)]
    out.sort(key=lambda t: (t[1].price, t[0], t[1].zone))
    return out


def _offer_key(itype: str, zone: str) -> str:
    """The ClientToken's suffix: the offering, not its position in the list, which the unavailable offerings change
    between activity attempts. One token never names two different requests, and two attempts asking for one
    offering (one retried while the other still runs) ask with one token, so EC2 answers both with one instance."""
    return hashlib.sha256(f"{itype}/{zone}".encode()).hexdigest()[:8]


def _offer_of(instance: dict[str, Any], offers: list[tuple[str, Offering]]) -> tuple[str, Offering]:
    """The offering an already-running instance was launched as (a retried activity reports what runs)."""
    zone = (instance.get("Placement") or {}).get("AvailabilityZone")
    for itype, off in offers:
        if itype == instance.get("InstanceType") and off.zone == zone:
            return itype, off
    return offers[0]


class ProvisioningActivities:
    """Clients come in: the Kubernetes gateway, the cloud provider (or a boto3 EC2 client it wraps), the catalog."""

    def __init__(self, kube: KubeClient, ec2: CloudProvider | Any, catalog: InstanceTypeCatalog,
                 ami_id: str | None = None, cluster: ClusterInfo | None = None,
                 offerings: UnavailableOfferings | None = None, launch_api: LaunchApi = LaunchApi.FLEET,
                 templates: LaunchTemplates | None = None) -> None:
        self._kube = kube
        self._ec2 = cloud_provider(ec2)
        self._catalog = catalog
        self._ami_id = ami_id
        # The worker's one cache of offerings EC2 refused lately (planning/pricing/unavailable_offerings.py): a launch
        # skips them and marks what it is refused; a fresh one when none is given (tests, tools).
        self._offerings = offerings if offerings is not None else UnavailableOfferings()
        self._classes = NodeClassLauncher(kube, catalog, cluster, ami_id)
        self._cluster_name = cluster.name if cluster is not None else ""
        self._launch_api = launch_api
        self._reservations = ReservationBook(kube)
        self._fleet = FleetLauncher(self._ec2, self._classes, lambda: current_catalog(self._catalog),  # type: ignore
                                    self._offerings, self._cluster_name, self._delete_claim,
                                    self._reservations.full, templates)

    # ---- launch ---------------------------------------------------------------------------------------------

    @activity.defn(name="disruption_launch_replacement")
    async def launch_replacement(self, inp: LaunchInput) -> LaunchedReplacement:
        return await heartbeating(asyncio.to_thread(self._launch_unless_refused, inp))

    def _launch_unless_refused(self, inp: LaunchInput) -> LaunchedReplacement:
        """`_launch`; EC2 refusing the worker's credentials (UnauthorizedOperation, e.g. rotated keys or a policy
        missing an action) fails it for good, with a Warning Event on the NodePool naming the IAM action: retrying
        cannot help until an operator acts, and a silent retry loop would hide it. The claim is deleted (no
        instance was made for it), so the pods' next provisioning round starts clean."""
        try:
            return self._launch(inp)
        except Exception as exc:
            if classify(exc) is not CloudErrorKind.UNAUTHORIZED:
                raise
            operation = getattr(exc, "operation_name", "") or "RunInstances"
            action = f"ec2:{operation}" if "_" not in operation else iam_action(operation)
            message = (f"EC2 refused {operation} ({error_code(exc)}): the worker's credentials need IAM action "
                       f"{action}; launches in NodePool {inp.node_pool} fail until they have it")
            self._say_unauthorized(inp.node_pool, message)
            claim = self._kube.get_node_claim(nodeclaim_name(inp.node_pool, inp.key))
            if claim is not None:
                self._delete_claim(claim["metadata"]["name"])
            raise ApplicationError(message, action, type=ErrorType.CLOUD_UNAUTHORIZED.value,
                                   non_retryable=True) from exc

    def _say_unauthorized(self, node_pool: str, message: str) -> None:
        activity.logger.error(message)
        try:  # best effort: the activity's error says the same
            pool = self._kube.get_node_pool(node_pool) or {}
            self._kube.create_event(event_body("NodePool", node_pool, EventReason.CLOUD_UNAUTHORIZED, message,
                                               datetime.now(UTC), uid=(pool.get("metadata") or {}).get("uid"),
                                               type_="Warning"))
        except Exception as exc:
            activity.logger.warning("could not record the CloudUnauthorized event of %s: %s", node_pool, exc)

    def _launch(self, inp: LaunchInput) -> LaunchedReplacement:
        pool = self._get_nodepool(inp.node_pool)
        node_class = self._classes.node_class_for(pool)  # before the claim: a class that is not Ready launches nothing
        claim = self._ensure_nodeclaim(pool, inp)
        meta = claim["metadata"]
        zones = allowed_zones(claim["spec"]["requirements"])
        if node_class is not None:  # only zones the class has a subnet in
            zones = subnet_zones(node_class) if zones is None else zones & subnet_zones(node_class)
        priced = self._priced_catalog(pool)
        if node_class is not None:  # its capacity reservations as `reserved` offerings (§16.4)
            priced = with_reservations(priced, node_class.status.capacity_reservations)
        offers = self._offers(priced, inp.replacement, zones, node_class)
        if not offers:
            self._delete_claim(meta["name"])
            if inp.replacement.capacity_type == CAPACITY_RESERVED:  # used up since the plan: re-plan (Karpenter: ICE)
                raise ApplicationError(f"InsufficientCapacity: no capacity reservation with room for "
                                       f"{inp.replacement.instance_types}", [], meta["name"],
                                       type=ErrorType.INSUFFICIENT_CAPACITY.value, non_retryable=True)
            served = "" if node_class is None or not offerings_cheapest_first(priced, inp.replacement, zones) else \
                f" (EC2NodeClass {node_class.name} has an image for none of them)"
            raise ApplicationError(
                f"no available offering for {inp.replacement.capacity_type} {inp.replacement.instance_types}{served}",
                type=ErrorType.LAUNCH_FAILED.value, non_retryable=True)
        existing = self._existing_instance(meta["name"], meta["uid"])
        if existing is not None:  # a retry reports what runs, even if its offering was marked since
            itype, off = _offer_of(existing, offers)
            instance = existing
            self._reservations.label(meta["name"], off)  # counted by the attempt that launched it
        else:
            offers = self._not_refused(meta["name"], inp.replacement, zones, offers, priced, node_class)
            instance, itype, off = self._create(claim, inp, offers, node_class)
            if node_class is not None:
                self._reservations.launched(meta["name"], node_class.name, off)
        if node_class is not None:
            self._classes.record(claim, instance, node_class)
        self._record_launch(meta["name"], instance, itype, inp.replacement.capacity_type, node_class)
        self._note_spot_fallback(claim, pool, inp.replacement, zones, priced)
        return LaunchedReplacement(node_claim=meta["name"], uid=meta["uid"], instance_id=instance["InstanceId"],
                                   instance_type=itype, zone=off.zone, capacity_type=inp.replacement.capacity_type,
                                   price=off.price)

    def _record_launch(self, name: str, instance: dict[str, Any], itype: str, capacity: str,
                       node_class: EC2NodeClass | None = None) -> None:
        """The claim's launch record (providerID, imageID, capacity, labels, Launched), as Karpenter writes it right
        after Create; the lifecycle controller writes the same from the instance should this attempt die first.
        Capacity and allocatable are the type's under `node_class` (its disks and kubelet block)."""
        described = {**instance, "InstanceType": itype}
        catalog = current_catalog(self._catalog)
        overhead = float(getattr(catalog, "vm_memory_overhead_percent", VM_MEMORY_OVERHEAD_PERCENT))

        def patch(obj: Obj, part: int) -> Obj | None:
            return launch_patch(obj, described, self._catalog.get(itype), datetime.now(UTC), capacity, node_class,
                                overhead)[part]

        # the labels before Launched, as Karpenter (a Launched claim without them reads as RequirementsDrifted)
        self._kube.update("NodeClaim", name, lambda obj: patch(obj, 0))
        self._kube.update("NodeClaim", name, lambda obj: patch(obj, 1), status=True)

    def _note_spot_fallback(self, claim: Obj, pool: Obj, r: Replacement, zones: set[str] | None,
                            priced: InstanceTypeCatalog) -> None:
        """An on-demand launch only because EC2 refused spot lately (in a pool that admits spot) is recorded on its
        claim, `nodeflow.dev/spot-fallback: <now>`, for spot.returnAfter and maxOnDemandFraction
        (planning/policies/spot_return.py, docs/semantics.md §15.5). A retried attempt keeps the first time."""
        meta = claim["metadata"]
        if SPOT_FALLBACK_ANNOTATION in (meta.get("annotations") or {}):
            return
        reqs = (((pool.get("spec") or {}).get("template") or {}).get("spec") or {}).get("requirements") or []
        if not fell_back(reqs, r.capacity_type, r.instance_types, zones, priced, self._offerings.apply(priced)):
            return
        now = datetime.now(UTC)
        self._kube.patch_node_claim(meta["name"], {"metadata": {"annotations": {
            SPOT_FALLBACK_ANNOTATION: fallback_value(now)}}})
        metrics.SPOT_FALLBACKS.labels(nodepool=(pool.get("metadata") or {}).get("name", "")).inc()
        try:  # an explanation is best effort; named, so a retried attempt records it once
            self._kube.create_event(event_body("NodeClaim", meta["name"], EventReason.SPOT_FALLBACK,
                                               fallback_message(r.instance_types), now, uid=meta.get("uid"),
                                               event_name=f"{meta['name']}.spot-fallback"))
        except Exception as exc:
            activity.logger.warning("could not record the spot fallback event of %s: %s", meta["name"], exc)

    def _priced_catalog(self, pool: Obj) -> InstanceTypeCatalog:
        """The catalog with the cluster's NodeOverlay prices for this NodePool, so a launch tries offerings in the
        order planning priced them (a reserved type first), as Karpenter's fleet takes overlay prices as priorities
        (docs/semantics.md §16.2). Overlays that cannot be read or parsed price nothing. One catalog per launch:
        a refreshing source is resolved to its current catalog first."""
        catalog: InstanceTypeCatalog = current_catalog(self._catalog)  # type: ignore[assignment]
        try:
            objs = self._kube.list_node_overlays()
        except Exception as exc:  # e.g. RBAC without nodeoverlays: launch on the catalog's prices
            activity.logger.warning("could not read NodeOverlays, launching on catalog prices: %s", exc)
            return catalog
        overlays = []
        for obj in objs:
            try:
                overlays.append(load_node_overlay(obj))
            except ValueError:  # the CRD refuses these; one written without it is ignored, not fatal
                continue
        template = (pool.get("spec") or {}).get("template") or {}
        return pool_catalog(catalog, overlays, (pool.get("metadata") or {}).get("name", ""),
                            (template.get("metadata") or {}).get("labels") or {})

    def _offers(self, catalog: InstanceTypeCatalog, r: Replacement, zones: set[str] | None,
                node_class: EC2NodeClass | None) -> list[tuple[str, Offering]]:
        """Offerings cheapest first, less the types no image of the class serves (an arm64 type when its images are
        all x86_64): Karpenter's launch template resolution (amifamily Resolve -> MapToInstanceTypes) leaves them
        out of the fleet request, so the launch takes the next type the claim allows instead of failing."""
        offers = offerings_cheapest_first(catalog, r, zones)
        if node_class is None:
            return offers
        served: dict[str, bool] = {}
        for t, _ in offers:
            if t not in served:
                served[t] = self._classes.image_for(node_class, t) is not None
        return [(t, o) for t, o in offers if served[t]]

    def _not_refused(self, claim_name: str, r: Replacement, zones: set[str] | None,
                     offers: list[tuple[str, Offering]], priced: InstanceTypeCatalog,
                     node_class: EC2NodeClass | None) -> list[tuple[str, Offering]]:
        """`offers` without those EC2 refused in the last 3 minutes. When that leaves none, no capacity: the
        provisioner backs off and tries again, a disruption rolls back (as after ICE on every offering)."""
        left = self._offers(self._offerings.apply(priced), r, zones, node_class)
        if left:
            return left
        self._delete_claim(claim_name)
        refused = [f"{t}/{o.zone}" for t, o in offers]
        raise ApplicationError(f"InsufficientInstanceCapacity: every offering was refused in the last "
                               f"{int(self._offerings.ttl_seconds)}s: {', '.join(refused[:10])}", refused,
                               claim_name, type=ErrorType.INSUFFICIENT_CAPACITY.value, non_retryable=True)

    def _create(self, claim: Obj, inp: LaunchInput, offers: list[tuple[str, Offering]],
                node_class: EC2NodeClass | None) -> tuple[dict[str, Any], str, Offering]:
        """One CreateFleet over every offering (Karpenter's launch) when the pool has an EC2NodeClass (its subnets
        make the overrides) and the cloud launches fleets; else RunInstances per offering, cheapest first."""
        if self._launch_api is LaunchApi.FLEET and node_class is not None and isinstance(self._ec2, FleetCloud):
            meta = claim["metadata"]
            tags = {**instance_tags(node_class, self._cluster_name or "nodeflow", inp.node_pool, meta["name"]),
                    NODECLAIM_TAG: meta["name"], NODEPOOL_TAG: inp.node_pool, NODECLAIM_UID_TAG: meta["uid"],
                    "Name": meta["name"], **cluster_tags(self._cluster_name)}
            return self._fleet.launch(claim, inp.replacement.capacity_type, offers, node_class, tags)
        return self._run_first_available(claim, inp, offers, node_class)

    def _run_first_available(self, claim: Obj, inp: LaunchInput, offers: list[tuple[str, Offering]],
                             node_class: EC2NodeClass | None) -> tuple[dict[str, Any], str, Offering]:
        """Cheapest offering first; an offering that answers ICE passes to the next (as Karpenter's CreateFleet
        overrides do). Each offering has its own ClientToken (`_offer_key`); a retried activity finds the instance by
        its tags."""
        refused: list[str] = []
        for itype, off in offers[:MAX_OFFERINGS_TRIED]:
            try:
                return self._run_instance(claim, inp, itype, off.zone, node_class, off), itype, off
            except _InsufficientCapacity as exc:
                self._offerings.mark(itype, off.zone, inp.replacement.capacity_type, ERROR_REASONS[str(exc)])
                if off.reservation_id and node_class is not None:
                    self._reservations.full(node_class.name, {off.reservation_id})
                refused.append(f"{itype}/{off.zone}")
                activity.logger.info("launch %s: %s in %s has no capacity, trying the next offering",
                                     claim["metadata"]["name"], itype, off.zone)
        self._delete_claim(claim["metadata"]["name"])
        raise ApplicationError(f"InsufficientInstanceCapacity for every offering: {', '.join(refused)}", refused,
                               claim["metadata"]["name"], type=ErrorType.INSUFFICIENT_CAPACITY.value,
                               non_retryable=True)

    def _get_nodepool(self, name: str) -> Obj:
        pool = self._kube.get_node_pool(name)
        if pool is None:
            raise ApplicationError(f"NodePool {name} not found", type=ErrorType.LAUNCH_FAILED.value, non_retryable=True)
        return pool

    def _ensure_nodeclaim(self, pool: Obj, inp: LaunchInput) -> Obj:
        name = nodeclaim_name(inp.node_pool, inp.key)
        existing = self._kube.get_node_claim(name)
        if existing is not None:
            return existing
        claim = build_nodeclaim(pool, name, inp)
        if relaxing() and relax_nodeclaim(claim, self._values_of(inp.replacement)):  # --min-values-policy BestEffort
            activity.logger.info("NodeClaim %s: minValues relaxed to what its instance types carry: %s", name,
                                 [q for q in claim["spec"]["requirements"] if q.get("minValues")])
        created = self._kube.create_node_claim(claim)
        relaxed = ((created.get("metadata") or {}).get("annotations") or {}).get(MIN_VALUES_RELAXED, "false")
        km.NODECLAIMS_CREATED.labels(reason=km.snake(inp.reason), nodepool=inp.node_pool,
                                     min_values_relaxed=relaxed).inc()  # provisioning/provisioner.go
        return created

    def _values_of(self, r: Replacement) -> Callable[[str], set[str]]:
        """The distinct values a label takes over the replacement's types (zones and capacity type from their
        offerings of its capacity type): what a relaxed minValues counts."""
        catalog = current_catalog(self._catalog)
        types = [it for name in r.instance_types if (it := catalog.get(name)) is not None]
        zones = {r.zone} if r.zone else None

        def values_of(key: str) -> set[str]:
            if key == labels.CAPACITY_TYPE_LABEL:
                return {r.capacity_type}
            if key == labels.ZONE_LABEL:
                return {o.zone for it in types for o in it.offerings
                        if o.capacity_type == r.capacity_type and (zones is None or o.zone in zones)}
            if key == labels.INSTANCE_TYPE_LABEL:
                return {it.name for it in types}
            return {v for it in types if (v := type_labels(it).get(key)) is not None}
        return values_of

    def _existing_instance(self, claim_name: str, claim_uid: str) -> dict[str, Any] | None:
        """The live instance launched for this very NodeClaim (its uid tag tells apart a same-named one)."""
        instances = self._ec2.instances(filters=[
            {"Name": f"tag:{NODECLAIM_TAG}", "Values": [claim_name]},
            {"Name": f"tag:{NODECLAIM_UID_TAG}", "Values": [claim_uid]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ])
        return instances[0] if instances else None

    def _launch_params(self, claim: Obj, inp: LaunchInput, itype: str, zone: str,
                       node_class: EC2NodeClass | None) -> dict[str, Any]:
        """Image, placement and tags: from the class when there is one, else the AMI setting and the zone."""
        meta = claim["metadata"]
        tags = {NODECLAIM_TAG: meta["name"], NODEPOOL_TAG: inp.node_pool, NODECLAIM_UID_TAG: meta["uid"],
                "Name": meta["name"], **cluster_tags(self._cluster_name)}
        if node_class is None:
            if self._ami_id is None:  # node_class_for refuses the legacy path without one, before any claim
                raise ApplicationError("a launch without an EC2NodeClass needs --ami-id",
                                       type=ErrorType.NODE_CLASS_NOT_READY.value, non_retryable=True)
            params: dict[str, Any] = {"ImageId": self._ami_id, "Placement": {"AvailabilityZone": zone}}
        else:
            try:
                params = self._classes.run_params(node_class, claim, inp.node_pool, itype, zone)
            except ValueError as exc:
                self._delete_claim(meta["name"])
                raise ApplicationError(str(exc), type=ErrorType.LAUNCH_FAILED.value, non_retryable=True) from exc
            tags = {**params.pop("Tags"), **tags}
        tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]
        resources = ["instance"] if node_class is None else ["instance", "volume"]
        params["TagSpecifications"] = [{"ResourceType": r, "Tags": tag_list} for r in resources]
        return params

    def _run_instance(self, claim: Obj, inp: LaunchInput, itype: str, zone: str,
                      node_class: EC2NodeClass | None = None, off: Offering | None = None) -> dict[str, Any]:
        params = self._launch_params(claim, inp, itype, zone, node_class)
        if off is not None and off.reservation_id:  # into the reservation, as the fleet's template would (§16.4)
            params.update(reservation_template(off.reservation_id, off.reservation_type))
        uid = claim["metadata"]["uid"]
        params.update(InstanceType=itype, MinCount=1, MaxCount=1,
                      ClientToken=client_token(f"{uid}-{_offer_key(itype, zone)}"))
        if inp.replacement.capacity_type == labels.CAPACITY_SPOT:
            params["InstanceMarketOptions"] = {"MarketType": "spot",
                                               "SpotOptions": {"SpotInstanceType": "one-time"}}
        try:
            with km.cloudprovider_call("nodeclaim.lifecycle", "Create", _launch_error):
                return self._ec2.launch(params)
        except Exception as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            km.LAUNCH_FAILURES.labels(zone=zone, zone_id="", capacity_type=inp.replacement.capacity_type,
                                      reason=code or type(exc).__name__).inc()
            if code in ICE_ERRORS:
                raise _InsufficientCapacity(code) from exc
            if code in FATAL_EC2_ERRORS:
                raise ApplicationError(f"RunInstances {itype} in {zone}: {code}", type=ErrorType.LAUNCH_FAILED.value,
                                       non_retryable=True) from exc
            raise

    # ---- status ---------------------------------------------------------------------------------------------

    @activity.defn(name="disruption_replacement_status")
    async def replacement_status(self, inp: StatusInput) -> list[ReplacementStatus]:
        """Waiting here (heartbeating) instead of on workflow timers keeps the history short and reacts fast."""
        deadline = time.monotonic() + inp.wait_seconds
        interval = min(1.0, max(inp.wait_seconds / 10, 0.1))
        while True:
            statuses = await asyncio.to_thread(read_statuses, self._kube, inp.replacements)
            done = all(s.ready for s in statuses) or any(s.gone for s in statuses)
            if done or time.monotonic() + interval > deadline:
                return statuses
            activity.heartbeat([s.node_claim for s in statuses if s.ready])
            await asyncio.sleep(interval)

    # ---- delete ---------------------------------------------------------------------------------------------

    @activity.defn(name="disruption_delete_replacement")
    async def delete_replacement(self, r: LaunchedReplacement) -> str:
        """Remove a replacement that never became Ready: terminate its instance, delete Node and NodeClaim."""
        return await heartbeating(asyncio.to_thread(self._delete, r))

    def _delete(self, r: LaunchedReplacement) -> str:
        claim = self._kube.get_node_claim(r.node_claim)
        node = find_node(self._kube, claim, r) if claim else None
        instance_ids = [r.instance_id] if r.instance_id else []
        existing = self._existing_instance(r.node_claim, r.uid)
        if existing and existing["InstanceId"] not in instance_ids:
            instance_ids.append(existing["InstanceId"])
        if instance_ids:
            try:
                self._ec2.terminate(instance_ids)
            except Exception as exc:
                if getattr(exc, "response", {}).get("Error", {}).get("Code") != "InvalidInstanceID.NotFound":
                    raise
        # Nothing ever ran on a node that never became Ready, so no drain is owed: drop finalizers and delete.
        if node is not None:
            self._kube.delete_unheld("Node", node["metadata"]["name"])
        if claim is not None:
            self._delete_claim(r.node_claim)
        return r.node_claim

    def _delete_claim(self, name: str) -> None:
        """A claim whose launch never made an instance: nothing to terminate, so it goes without a termination."""
        self._kube.delete_unheld("NodeClaim", name)


def build_nodeclaim(pool: dict[str, Any], name: str, inp: LaunchInput) -> dict[str, Any]:
    """A NodeClaim from the NodePool's template, owned by the NodePool, narrowed to the chosen types."""
    pmeta = pool.get("metadata") or {}
    template = (pool.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    tspec = template.get("spec") or {}
    claim_labels = dict(tmeta.get("labels") or {})
    claim_labels[labels.NODEPOOL_LABEL] = inp.node_pool
    annotations = dict(tmeta.get("annotations") or {})
    for key in (labels.NODEPOOL_HASH_ANNOTATION, labels.NODEPOOL_HASH_VERSION_ANNOTATION):
        if key in (pmeta.get("annotations") or {}):
            annotations[key] = pmeta["annotations"][key]
    template_hash = _template_hash(pool)
    if template_hash:
        annotations[labels.TEMPLATE_HASH_ANNOTATION] = template_hash
    annotations[labels.DISRUPTION_ANNOTATION] = inp.key
    spec = {k: copy.deepcopy(v) for k, v in tspec.items() if k != "requirements"}
    spec["requirements"] = narrowed_requirements(tspec.get("requirements") or [], inp.replacement)
    return {
        "apiVersion": labels.API_VERSION,
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": claim_labels,
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": labels.API_VERSION, "kind": "NodePool", "name": pmeta.get("name"),
                                 "uid": pmeta.get("uid"), "blockOwnerDeletion": True}],
        },
        "spec": spec,
    }


def _template_hash(pool: dict[str, Any]) -> str | None:
    """The drift hash planning compares against, so a fresh replacement is never itself drifted."""
    try:
        return load_nodepool(pool).template_hash()
    except ValueError:  # an invalid NodePool still gets its replacement; drift falls back to requirements
        return None


def _launch_error(exc: Exception) -> str:
    """The cloudprovider error label: Karpenter's typed error for no capacity, "" for the rest."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return "InsufficientCapacityError" if code in ICE_ERRORS else ""
