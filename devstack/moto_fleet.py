"""EC2's answers to an instant CreateFleet where moto (5.2) gives others, for what nodeflow's launch relies on.

moto as shipped (docs/semantics.md §16.3, the stand-in):
- launches an instant fleet's instance from the launch template's image, type, subnet and tags only: the
  template's security group ids, instance profile, disks, IMDS options and network interfaces are dropped, so a
  node's drift record (its security groups) and its profile would differ from what EC2 launches;
- ignores ClientToken: a retried request launches a second instance, where EC2 answers the first request's answer;
- picks the override with the lowest `SpotPrice` (none set: the first) whatever the allocation strategy, and never
  answers a capacity error (tests inject those per override: simulator/ice.py).

`install()` makes an instant fleet launch each instance as RunInstances would with the template's parameters and
the chosen override (the override with the lowest `Priority`, else the first: nodeflow sends them cheapest first,
which is `lowest-price`'s pick), and answers a repeated ClientToken with the first answer. Run as
`python -m devstack.moto_fleet -H HOST -p PORT` (moto_server with this alone, the tests' shared EC2) or through
`devstack.moto_indexed` (the devstack's stand-in), which installs it too.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_TOKENS: dict[tuple[str, str, str], str] = {}  # (account, region, ClientToken) -> fleet id
_LOCK = threading.Lock()


def _choose(fleet: Any) -> Any:
    """The launch spec EC2 would fill first: the lowest Priority when priorities are given, else the first."""
    specs = list(fleet.launch_specs)
    with_priority = [s for s in specs if (s.overrides or {}).get("Priority") is not None]
    if with_priority:
        return min(with_priority, key=lambda s: float(s.overrides["Priority"]))
    return specs[0]


def _run(fleet: Any, spec: Any, lifecycle: str) -> Any:
    """One instance as RunInstances launches it: the template's parameters, the override's type, subnet, image."""
    from moto.ec2.utils import parse_user_data

    backend = fleet.ec2_backend
    data = backend._get_template_from_args(spec.launch_template_spec).data
    override = spec.overrides or {}
    subnet = override.get("SubnetId") or data.get("SubnetId")
    kwargs: dict[str, Any] = {
        "instance_type": override.get("InstanceType") or data.get("InstanceType"),
        "is_instance_type_default": False, "region_name": backend.region_name, "placement": None,
        "tags": spec.tag_specifications, "security_group_ids": data.get("SecurityGroupIds") or [],
        "metadata_options": data.get("MetadataOptions") or {}, "fleet_id": fleet.id,
        "monitoring_state": "enabled" if str((data.get("Monitoring") or {}).get("Enabled")).lower() == "true"
        else "disabled",
        "instance_market_options": "spot" if lifecycle == "spot" else {},
    }
    nics = [dict(n) for n in data.get("NetworkInterfaces") or []]
    if nics:
        nics[0]["SubnetId"] = subnet
        kwargs["nics"] = nics
    else:
        kwargs["subnet_id"] = subnet
    if data.get("BlockDeviceMappings"):
        kwargs["block_device_mappings"] = data["BlockDeviceMappings"]
    image = override.get("ImageId") or data.get("ImageId")
    raw = data.get("UserData")  # the template keeps it parsed already, or as the request's base64 text
    user_data = parse_user_data(raw) if isinstance(raw, str | bytes) else raw
    reservation = backend.run_instances(image, 1, user_data, [], **kwargs)
    instance = reservation.instances[0]
    profile = data.get("IamInstanceProfile") or {}
    if profile.get("Name") or profile.get("Arn"):
        backend.associate_iam_instance_profile(instance_id=instance.id, iam_instance_profile_name=profile.get("Name"),
                                               iam_instance_profile_arn=profile.get("Arn"))
    return instance


def _launcher(original: Any, lifecycle: str) -> Any:
    def launch(self: Any, weight_to_add: float) -> Any:
        if self.fleet_type != "instant":
            return original(self, weight_to_add)
        launched = self.__dict__.setdefault("nodeflow_launched", [])
        spec = _choose(self)
        for _ in range(int(weight_to_add)):
            launched.append((_run(self, spec, lifecycle), lifecycle, spec))
        self.fulfilled_capacity += int(weight_to_add)
        return None
    launch.__wrapped_fleet__ = original  # type: ignore[attr-defined]
    return launch


def _instances(original: Any) -> Any:
    def instances(self: Any) -> Any:
        launched = self.__dict__.get("nodeflow_launched")
        if launched is None:
            return original.fget(self)
        return [self._build_instance_data(instance=i, lifecycle=life, launch_spec=spec) for i, life, spec in launched]
    return property(instances)


def _idempotent(original: Any) -> Any:
    def create_fleet(self: Any) -> Any:
        from moto.core.responses import ActionResult

        token = self._get_param("ClientToken")
        key = (self.current_account, self.region, token)
        with _LOCK:
            if token and key in _TOKENS and _TOKENS[key] in self.ec2_backend.fleets:
                fleet = self.ec2_backend.fleets[_TOKENS[key]]
                result: dict[str, Any] = {"FleetId": fleet.id}
                if fleet.instances is not None:
                    result["Instances"] = fleet.instances
                return ActionResult(result)
            answer = original(self)
            if token:
                _TOKENS[key] = answer.result["FleetId"]
            return answer
    create_fleet.__wrapped_fleet__ = original  # type: ignore[attr-defined]
    return create_fleet


def install() -> None:
    """Patch moto's instant fleets in this process (idempotent)."""
    from moto.ec2.models.fleets import Fleet
    from moto.ec2.responses.fleets import Fleets

    def unwrapped(obj: Any) -> Any:
        return getattr(obj, "__wrapped_fleet__", obj)

    Fleet.create_on_demand_requests = _launcher(unwrapped(Fleet.create_on_demand_requests), "on-demand")  # type: ignore
    Fleet.create_spot_requests = _launcher(unwrapped(Fleet.create_spot_requests), "spot")  # type: ignore
    if not getattr(Fleet, "__nodeflow_instances__", False):
        Fleet.instances = _instances(Fleet.instances)  # type: ignore[method-assign,assignment]
        Fleet.__nodeflow_instances__ = True  # type: ignore[attr-defined]
    Fleets.create_fleet = _idempotent(unwrapped(Fleets.create_fleet))  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> None:
    install()
    import moto.server

    moto.server.main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
