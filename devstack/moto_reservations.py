"""Capacity reservations in the stand-in EC2: moto (5.2) has none (no CreateCapacityReservation, no
DescribeCapacityReservations, and a launch template's CapacityReservationSpecification is stored but never
honoured), so `install()` adds what nodeflow relies on (docs/semantics.md §16.4, the stand-in):

- CreateCapacityReservation (InstanceType, AvailabilityZone, InstanceCount, EndDate, InstanceMatchCriteria, tags)
  and DescribeCapacityReservations (by id, or the `state`, `owner-id`, `instance-match-criteria`, `tag:K` and
  `tag-key` filters). EC2 sells capacity blocks through PurchaseCapacityBlock; here a reservation created with the
  tag `nodeflow.dev/reservation-type: capacity-block` is answered as one (`ReservationType: capacity-block`).
- `AvailableInstanceCount` is the count less the instances launched into the reservation that are not terminated,
  so a terminated node gives its place back, as EC2 does.
- An instant CreateFleet whose launch template targets a reservation (`capacity-reservations-only`) launches into
  it while it has room; when every targeted reservation is full, EC2's answer: no instance, a
  `ReservationCapacityExceeded` error per override. (With some configs full and others not, the full ones are
  skipped without an error.)
"""

from __future__ import annotations

import itertools
import threading
from datetime import UTC, datetime
from typing import Any

BLOCK_TAG = "nodeflow.dev/reservation-type"
FULL_CODE = "ReservationCapacityExceeded"
_LOCK = threading.Lock()
_RESERVATIONS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}  # (account, region) -> id -> reservation
_LAUNCHED: dict[str, list[str]] = {}  # reservation id -> instance ids launched into it
_IDS = itertools.count(1)


def _store(account: str, region: str) -> dict[str, dict[str, Any]]:
    return _RESERVATIONS.setdefault((account, region), {})


def _available(backend: Any, cr: dict[str, Any]) -> int:
    alive = 0
    for iid in _LAUNCHED.get(cr["CapacityReservationId"], []):
        try:
            inst = backend.get_instance(iid)
        except Exception:
            continue
        alive += inst._state.name not in ("terminated", "shutting-down")
    return max(int(cr["TotalInstanceCount"]) - alive, 0)


def _matches(cr: dict[str, Any], filters: list[dict[str, Any]]) -> bool:
    tags = {t["Key"]: t["Value"] for t in cr.get("Tags") or []}
    for f in filters:
        name, values = f.get("Name", ""), list(f.get("Values") or [])
        if name == "state":
            ok = cr["State"] in values
        elif name == "owner-id":
            ok = cr["OwnerId"] in values
        elif name == "instance-match-criteria":
            ok = cr["InstanceMatchCriteria"] in values
        elif name == "tag-key":
            ok = any(v in tags for v in values)
        elif name.startswith("tag:"):
            ok = tags.get(name[4:]) in values
        else:
            ok = True
        if not ok:
            return False
    return True


def create_capacity_reservation(self: Any) -> Any:
    from moto.core.responses import ActionResult

    tags = [t for spec in self._get_param("TagSpecifications", []) for t in spec.get("Tags") or []]
    block = any(t["Key"] == BLOCK_TAG and t["Value"] == "capacity-block" for t in tags)
    end = self._get_param("EndDate")
    cr = {"CapacityReservationId": f"cr-{next(_IDS):017x}", "OwnerId": self.current_account,
          "InstanceType": self._get_param("InstanceType"), "AvailabilityZone": self._get_param("AvailabilityZone"),
          "InstancePlatform": self._get_param("InstancePlatform") or "Linux/UNIX",
          "TotalInstanceCount": int(self._get_param("InstanceCount")),
          "InstanceMatchCriteria": self._get_param("InstanceMatchCriteria") or "open", "State": "active",
          "ReservationType": "capacity-block" if block else "default", "Tags": tags,
          "CreateDate": datetime.now(UTC), "EndDateType": "limited" if end else "unlimited"}
    if end:
        cr["EndDate"] = end if isinstance(end, datetime) else datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    with _LOCK:
        _store(self.current_account, self.region)[cr["CapacityReservationId"]] = cr
        answer = {**cr, "AvailableInstanceCount": cr["TotalInstanceCount"]}
    return ActionResult({"CapacityReservation": answer})


def describe_capacity_reservations(self: Any) -> Any:
    from moto.core.responses import ActionResult
    from moto.ec2.exceptions import EC2ClientError

    ids = self._get_param("CapacityReservationIds", [])
    filters = self._get_param("Filters", [])
    with _LOCK:
        store = _store(self.current_account, self.region)
        missing = [i for i in ids if i not in store]
        if missing:
            err = EC2ClientError()
            err.code, err.message = "InvalidCapacityReservationId.NotFound", f"{missing[0]} not found"
            raise err
        chosen = [store[i] for i in ids] if ids else list(store.values())
        out = [{**cr, "AvailableInstanceCount": _available(self.ec2_backend, cr)}
               for cr in chosen if _matches(cr, filters)]
    return ActionResult({"CapacityReservations": out})


def target_of(template_data: dict[str, Any]) -> str | None:
    """The reservation a launch template's data targets, if any."""
    spec = template_data.get("CapacityReservationSpecification") or {}
    return (spec.get("CapacityReservationTarget") or {}).get("CapacityReservationId")


def room(backend: Any, reservation_id: str) -> bool:
    with _LOCK:
        cr = _store(backend.account_id, backend.region_name).get(reservation_id)
        return cr is not None and _available(backend, cr) > 0


def launched(reservation_id: str, instance_id: str) -> None:
    with _LOCK:
        _LAUNCHED.setdefault(reservation_id, []).append(instance_id)


def full_answer(backend: Any, configs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """EC2's answer when every config targets a reservation with no room left; None otherwise."""
    errors = []
    for config in configs:
        spec = config.get("LaunchTemplateSpecification") or {}
        template = backend._get_template_from_args(spec)
        target = target_of(template.data)
        if target is None or room(backend, target):
            return None
        for override in config.get("Overrides") or [{}]:
            errors.append({"LaunchTemplateAndOverrides": {"LaunchTemplateSpecification": spec, "Overrides": override},
                           "Lifecycle": "on-demand", "ErrorCode": FULL_CODE,
                           "ErrorMessage": f"Insufficient capacity in capacity reservation {target}."})
    return {"FleetId": "", "Errors": errors, "Instances": []} if errors else None


def install() -> None:
    """Add the two actions to moto's EC2 in this process (idempotent)."""
    from moto.ec2.responses import EC2Response

    EC2Response.create_capacity_reservation = create_capacity_reservation  # type: ignore[attr-defined]
    EC2Response.describe_capacity_reservations = describe_capacity_reservations  # type: ignore[attr-defined]
