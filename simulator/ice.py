"""Insufficient-capacity errors on demand: EC2 answers RunInstances with InsufficientInstanceCapacity when a
pool is out of capacity; moto never does, so tests install this on the launcher's boto3 client."""

from __future__ import annotations

from typing import Any


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
        self.spot_unavailable: set[tuple[str, str]] = set()  # the same, for spot requests only
        self.refused: list[tuple[str, str]] = []

    def exhaust(self, itype: str, zone: str = "*") -> None:
        self.unavailable.add((itype, zone))

    def exhaust_spot(self, itype: str, zone: str = "*") -> None:
        """Spot pools run dry apart from on-demand capacity: only spot requests for the type are refused."""
        self.spot_unavailable.add((itype, zone))

    def restore(self) -> None:
        self.unavailable.clear()
        self.spot_unavailable.clear()

    def install(self, client: Any) -> IceInjector:
        client.meta.events.register("before-call.ec2.RunInstances", self._before_call)
        return self

    def _before_call(self, params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]] | None:
        body = params.get("body") or {}
        itype, zone = body.get("InstanceType", ""), body.get("Placement.AvailabilityZone", "")
        refused = self.unavailable
        if body.get("InstanceMarketOptions.MarketType") == "spot":
            refused = self.unavailable | self.spot_unavailable
        if (itype, zone) not in refused and (itype, "*") not in refused:
            return None
        self.refused.append((itype, zone))
        message = (f"We currently do not have sufficient {itype} capacity in the Availability Zone you requested "
                   f"({zone}).")
        return _HttpStatus(), {"Error": {"Code": "InsufficientInstanceCapacity", "Message": message},
                               "ResponseMetadata": {"HTTPStatusCode": 400}}
