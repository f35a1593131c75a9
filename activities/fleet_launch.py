"""A NodeClaim launched as Karpenter's AWS provider launches it: one CreateFleet (type instant) whose overrides are
the claim's offerings (each instance type x each zone the class has a subnet in), so one request tries them all
and EC2 picks (`lowest-price` on-demand, `price-capacity-optimized` spot). The request is shaped by the pure
planning/provisioning/fleet.py; this module creates the launch templates, sends it and reads the answer: each
override's capacity error marks that offering unavailable for 3 minutes, an instance beside errors is a launch,
no instance is a failed one (InsufficientCapacity when every error was about capacity).

Idempotent: the ClientToken derives from the NodeClaim uid, and the caller looks for the claim's tagged instance
before it sends anything (activities/provisioning.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.launch_templates import LaunchTemplates
from activities.nodeclass_launch import NodeClassLauncher
from api.catalog import InstanceTypeCatalog, Offering
from api.ec2nodeclass import EC2NodeClass
from api.nodeclass_launch import NODECLASS_TAG, cluster_tags, subnet_in_zone
from contracts.errors import ErrorType
from gateways.ec2 import TEMPLATE_MISSING, CloudProvider, FleetCloud, error_code
from gateways.kube import Obj
from planning.pricing.unavailable_offerings import ERROR_REASONS, UnavailableOfferings
from planning.provisioning import fleet
from planning.scheduling.min_values import relaxing
from telemetry import karpenter_metrics as km

FATAL_CODES = frozenset({"InvalidParameterValue", "InvalidAMIID.NotFound", "InvalidAMIID.Malformed",
                         "MaxSpotInstanceCountExceeded", "VcpuLimitExceeded"})


class FleetRefused(Exception):
    """CreateFleet launched no instance; `answer` holds EC2's errors."""

    def __init__(self, answer: fleet.FleetAnswer) -> None:
        super().__init__(fleet.combined_message(answer.errors))
        self.answer = answer


def _error_label(exc: Exception) -> str:
    """The cloudprovider error label, as Karpenter types it."""
    if isinstance(exc, FleetRefused) and exc.answer.all_capacity:
        return "InsufficientCapacityError"
    return "InsufficientCapacityError" if error_code(exc) in fleet.CAPACITY_CODES else ""


class FleetLauncher:
    """Sends one CreateFleet per claim over launch templates made (once per parameter set) from its class."""

    def __init__(self, ec2: CloudProvider, classes: NodeClassLauncher, catalog: Callable[[], InstanceTypeCatalog],
                 offerings: UnavailableOfferings, cluster_name: str,
                 delete_claim: Callable[[str], None],
                 reservations_full: Callable[[str, set[str]], None] | None = None,
                 templates: LaunchTemplates | None = None) -> None:
        self._ec2 = ec2
        self._classes = classes
        self._catalog = catalog
        self._offerings = offerings
        self._cluster_name = cluster_name
        self._delete_claim = delete_claim
        self._reservations_full = reservations_full  # (class name, reservation ids EC2 found full)
        # made or found by this process (no second DescribeLaunchTemplates), deleted a minute after their last use
        self._templates = templates or LaunchTemplates(ec2, cluster_name)  # type: ignore[arg-type]
        self._local = threading.local()  # .refused: (type, zone) EC2 refused in this thread's launch

    def launch(self, claim: Obj, capacity_type: str, offers: list[tuple[str, Offering]], nc: EC2NodeClass,
               tags: dict[str, str]) -> tuple[dict[str, Any], str, Offering]:
        """The instance EC2 launched, its type and the offering it was launched as."""
        meta = claim["metadata"]
        types = self._types(claim, offers)
        prioritized = fleet.overlay_priced(offers, self._base_price)
        kept = fleet.one_reservation_type([(t, o) for t, o in offers if t in types])
        held: list[str] = []  # templates this launch uses: no sweep deletes them until EC2 has answered
        try:
            params = fleet.fleet_request(self._configs(claim, nc, types, kept, prioritized, held), capacity_type,
                                         tags, f"nodeflow-fleet-{meta['uid']}"[:64], prioritized,
                                         next((o.reservation_type for _, o in kept if o.reservation_id), None))
            answer = self._send(meta["name"], params, capacity_type)
        finally:
            self._templates.release(held)
            self._note_full_reservations(nc.name, kept)
        instance = self._described(answer, nc)
        itype = instance.get("InstanceType") or answer.instance_type or ""
        zone = (instance.get("Placement") or {}).get("AvailabilityZone", "")
        off = next((o for t, o in offers if t == itype and o.zone == zone), None)
        if off is None:  # EC2 chose an override whose offering left the list since: price it from the catalog
            it = self._catalog().get(itype)
            off = (it.offering(zone, capacity_type) if it is not None else None) or \
                Offering(zone=zone, capacityType=capacity_type, price=0.0)  # type: ignore[call-arg]
        return instance, itype, off

    def _described(self, answer: fleet.FleetAnswer, nc: EC2NodeClass) -> dict[str, Any]:
        """The instance as DescribeInstances shows it; EC2 may not show a new instance yet (eventual consistency),
        and then it is what the answer says, with the template's security groups (Karpenter builds its instance
        from the fleet answer alone)."""
        try:
            found = self._ec2.instances(ids=[answer.instance_id or ""])
        except Exception as exc:
            if error_code(exc) != "InvalidInstanceID.NotFound":
                raise
            found = []
        if found:
            return found[0]
        ov = answer.override
        return {"InstanceId": answer.instance_id, "InstanceType": answer.instance_type or ov.get("InstanceType"),
                "Placement": {"AvailabilityZone": ov.get("AvailabilityZone", "")}, "SubnetId": ov.get("SubnetId"),
                "ImageId": ov.get("ImageId"), "SecurityGroups": [{"GroupId": g.id} for g in
                                                                 nc.status.security_groups or ()]}

    def _types(self, claim: Obj, offers: list[tuple[str, Offering]]) -> list[str]:
        """Karpenter's truncation: cheapest first, at most 60 types, minValues still met (else no launch)."""
        catalog = self._catalog()

        def value(itype: str, key: str) -> str | None:
            it = catalog.get(itype)
            return it.labels.get(key) if it is not None else None

        mins = fleet.min_values((claim.get("spec") or {}).get("requirements") or [])
        try:
            return fleet.truncate(fleet.order_types(offers), mins, value, strict=not relaxing())
        except fleet.MinValuesNotMet as exc:
            self._delete_claim(claim["metadata"]["name"])
            raise ApplicationError(str(exc), type=ErrorType.LAUNCH_FAILED.value, non_retryable=True) from exc

    def _base_price(self, itype: str, off: Offering) -> float | None:
        it = self._catalog().get(itype)
        base = it.offering(off.zone, off.capacity_type) if it is not None else None
        return base.price if base is not None else None

    def _configs(self, claim: Obj, nc: EC2NodeClass, types: list[str], offers: list[tuple[str, Offering]],
                 prioritized: bool, held: list[str]) -> list[tuple[str, list[fleet.Override]]]:
        """A launch template per distinct parameter set (image, user data, ...), each with its types' overrides.
        A reserved launch has a template per capacity reservation (it targets that reservation) whose overrides are
        that reservation's (type, zone) only, as Karpenter's."""
        groups: dict[str, list[tuple[str, Offering]]] = {}
        images: dict[str, str] = {}
        for itype in types:
            try:
                data = self._classes.template_data(nc, claim, itype)
            except ValueError as exc:
                self._delete_claim(claim["metadata"]["name"])
                raise ApplicationError(str(exc), type=ErrorType.LAUNCH_FAILED.value, non_retryable=True) from exc
            images[itype] = data["ImageId"]
            for off in (o for t, o in offers if t == itype):
                full = {**data, **fleet.reservation_template(off.reservation_id, off.reservation_type)} \
                    if off.reservation_id else data
                name = fleet.template_name(full)
                if name not in groups:
                    self._templates.ensure(name, full, {NODECLASS_TAG: nc.name, **cluster_tags(self._cluster_name)})
                    held.append(name)
                groups.setdefault(name, []).append((itype, off))
        zones = {o.zone for _, o in offers}
        subnets = {z: s.id for z in zones if (s := subnet_in_zone(nc, z)) is not None}
        return [(name, fleet.overrides(types, pairs, subnets, images, prioritized)) for name, pairs in groups.items()]

    def _send(self, claim_name: str, params: dict[str, Any], capacity_type: str) -> fleet.FleetAnswer:
        """CreateFleet; every override's error counted and, for capacity, marked; no instance raises."""
        assert isinstance(self._ec2, FleetCloud)
        try:
            with km.cloudprovider_call("nodeclaim.lifecycle", "Create", _error_label):
                answer = fleet.read_answer(self._ec2.create_fleet(params))
                self._note_errors(answer, capacity_type)
                if answer.instance_id is None:
                    raise FleetRefused(answer)
        except FleetRefused as exc:
            self._delete_claim(claim_name)
            failed = [f"{e.instance_type}/{e.zone}" for e in exc.answer.errors if e.instance_type]
            if exc.answer.all_capacity:
                raise ApplicationError(f"InsufficientInstanceCapacity for every offering: {', '.join(failed)}",
                                       failed, claim_name, type=ErrorType.INSUFFICIENT_CAPACITY.value,
                                       non_retryable=True) from exc
            raise ApplicationError(f"CreateFleet launched no instance: {exc}", type=ErrorType.LAUNCH_FAILED.value,
                                   non_retryable=True) from exc
        except Exception as exc:
            if error_code(exc) in TEMPLATE_MISSING:  # deleted behind this process: the retry makes it again
                self._templates.forget()
            if error_code(exc) in FATAL_CODES:
                raise ApplicationError(f"CreateFleet: {error_code(exc)}", type=ErrorType.LAUNCH_FAILED.value,
                                       non_retryable=True) from exc
            raise
        if answer.errors:
            activity.logger.info("launch %s: %s launched beside %d refused override(s)", claim_name,
                                 answer.instance_type, len(answer.errors))
        return answer

    def _note_full_reservations(self, node_class: str, offers: list[tuple[str, Offering]]) -> None:
        """The reservations whose (type, zone) EC2 refused in this launch (Karpenter's MarkUnavailable)."""
        refused, self._local.refused = getattr(self._local, "refused", []), []
        if self._reservations_full is None:
            return
        ids = {o.reservation_id for t, o in offers if o.reservation_id and (t, o.zone) in refused}
        if ids:
            self._reservations_full(node_class, {i for i in ids if i})

    def _note_errors(self, answer: fleet.FleetAnswer, capacity_type: str) -> None:
        for e in answer.errors:
            km.LAUNCH_FAILURES.labels(zone=e.zone, zone_id="", capacity_type=capacity_type, reason=e.code).inc()
            if e.capacity and e.instance_type and e.zone:
                self._local.refused = [*getattr(self._local, "refused", []), (e.instance_type, e.zone)]
                self._offerings.mark(e.instance_type, e.zone, capacity_type, ERROR_REASONS[e.code])

