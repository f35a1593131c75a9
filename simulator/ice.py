"""Insufficient-capacity errors on demand: EC2 answers RunInstances with InsufficientInstanceCapacity when a
pool is out of capacity, and an instant CreateFleet with one error per refused override (HTTP 200, beside the
instance launched from another override, or with none); moto never does, so tests install this on the
launcher's boto3 client."""

from __future__ import annotations

import re
import uuid
from typing import Any

_OVERRIDE = re.compile(r"^LaunchTemplateConfigs\.(\d+)\.Overrides\.(\d+)\.(.+)$")
_CONFIG = re.compile(r"^LaunchTemplateConfigs\.(\d+)\.(.+)$")


class _HttpStatus:
    """The part of a botocore HTTP response the client reads when a before-call hook answers instead of EC2."""

    status_code = 400
    headers: dict[str, str] = {}


class _HttpOk(_HttpStatus):
    status_code = 200


class IceInjector:
    """Makes RunInstances answer InsufficientInstanceCapacity for chosen (instance type, zone) pairs, as EC2 does
    when a pool is out of capacity; moto never does. Installed on the launcher's boto3 EC2 client (a botocore
    `before-call` hook answers before any request is sent), so a test can prove a launch falls back."""

    def __init__(self) -> None:
        self.unavailable: set[tuple[str, str]] = set()  # (type, zone); zone "*" means every zone
        self.spot_unavailable: set[tuple[str, str]] = set()  # the same, for spot requests only
        self.refused: list[tuple[str, str]] = []
        self.fleet_requests = 0  # CreateFleet calls seen (each answered by moto or here)

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
        client.meta.events.register("before-call.ec2.CreateFleet", self._before_fleet)
        client.meta.events.register("after-call.ec2.CreateFleet", self._after_fleet)
        return self

    def _refuses(self, itype: str, zone: str, spot: bool) -> bool:
        refused = self.unavailable | self.spot_unavailable if spot else self.unavailable
        return (itype, zone) in refused or (itype, "*") in refused

    def _before_fleet(self, params: dict[str, Any], context: dict[str, Any], **_: Any
                      ) -> tuple[Any, dict[str, Any]] | None:
        """Refused overrides leave the request (moto launches from the rest) and come back as the answer's
        Errors; with none left, EC2's answer is given here: no instance, an error per override."""
        self.fleet_requests += 1
        body = params.get("body") or {}
        spot = body.get("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot"
        configs = fleet_configs(body)
        errors: list[dict[str, Any]] = []
        for cfg in configs:
            kept = []
            for ov in cfg["overrides"]:
                itype, zone = ov.get("InstanceType", ""), ov.get("AvailabilityZone", "")
                if self._refuses(itype, zone, spot):
                    self.refused.append((itype, zone))
                    errors.append(_fleet_error(cfg["spec"], ov, spot))
                else:
                    kept.append(ov)
            cfg["overrides"] = kept
        if not errors:
            return None
        left = [c for c in configs if c["overrides"]]
        if not left:
            return _HttpOk(), {"FleetId": f"fleet-{uuid.uuid4()}", "Errors": errors, "Instances": [],
                               "ResponseMetadata": {"HTTPStatusCode": 200}}
        for key in [k for k in body if k.startswith("LaunchTemplateConfigs.")]:
            del body[key]
        body.update(fleet_form(left))
        context["nodeflow_fleet_errors"] = errors
        return None

    def _after_fleet(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        errors = context.pop("nodeflow_fleet_errors", None)
        if errors:
            parsed["Errors"] = [*(parsed.get("Errors") or []), *errors]

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


def fleet_configs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's launch template configs from its form fields: each one's specification fields and its
    overrides' fields, in index order."""
    specs: dict[int, dict[str, Any]] = {}
    overrides: dict[int, dict[int, dict[str, Any]]] = {}
    for key, value in body.items():
        if m := _OVERRIDE.match(key):
            overrides.setdefault(int(m[1]), {}).setdefault(int(m[2]), {})[m[3]] = value
        elif m := _CONFIG.match(key):
            specs.setdefault(int(m[1]), {})[m[2]] = value
    return [{"spec": specs.get(c, {}), "overrides": [o for _, o in sorted(overrides.get(c, {}).items())]}
            for c in sorted(set(specs) | set(overrides))]


def fleet_form(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """`fleet_configs` back into form fields, numbered from 1 again (EC2 and moto read a list up to its first gap)."""
    out: dict[str, Any] = {}
    for c, cfg in enumerate(configs, start=1):
        out.update({f"LaunchTemplateConfigs.{c}.{k}": v for k, v in cfg["spec"].items()})
        for o, ov in enumerate(cfg["overrides"], start=1):
            out.update({f"LaunchTemplateConfigs.{c}.Overrides.{o}.{k}": v for k, v in ov.items()})
    return out


def _fleet_error(spec: dict[str, Any], override: dict[str, Any], spot: bool) -> dict[str, Any]:
    prefix = "LaunchTemplateSpecification."
    template = {k[len(prefix):]: v for k, v in spec.items() if k.startswith(prefix)}
    itype, zone = override.get("InstanceType", ""), override.get("AvailabilityZone", "")
    return {"LaunchTemplateAndOverrides": {"LaunchTemplateSpecification": template, "Overrides": dict(override)},
            "Lifecycle": "spot" if spot else "on-demand", "ErrorCode": "InsufficientInstanceCapacity",
            "ErrorMessage": f"We currently do not have sufficient {itype} capacity in the Availability Zone you "
                            f"requested ({zone})."}
