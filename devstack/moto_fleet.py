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
which is `lowest-price`'s pick), and answers a repeated ClientToken with the first answer. A spot market may be
set over HTTP (`set_spot_market(endpoint, pools)`: each pool's price and capacity score, on PATH): a spot fleet
then picks as EC2 describes its strategies, `lowest-price` the cheapest pool among the overrides,
`price-capacity-optimized` the cheapest among the deepest (capacity at least half the deepest override's). Run as
`python -m devstack.moto_fleet -H HOST -p PORT` (moto_server with this and `devstack.moto_tags`, the tests'
shared EC2) or through `devstack.moto_indexed` (the devstack's stand-in), which installs it too.
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from typing import Any

from devstack import moto_dispatch, moto_instances, moto_parse, moto_reservations, moto_run_token, moto_tags
from runtime import startup_gc

PATH = "/_nodeflow/spot-market"
DEEP_SHARE = 0.5  # price-capacity-optimized: pools at least this share of the deepest one's capacity are "deep"
_TOKENS: dict[tuple[str, str, str], str] = {}  # (account, region, ClientToken) -> fleet id
_MARKET: dict[tuple[str, str], tuple[float, float]] = {}  # (instance type, zone) -> (spot price, capacity score)
_LOCK = threading.Lock()


def _pool(spec: Any) -> tuple[str, str]:
    override = spec.overrides or {}
    return str(override.get("InstanceType") or spec.instance_type), str(override.get("AvailabilityZone") or "")


def _choose(fleet: Any, lifecycle: str) -> Any:
    """The launch spec EC2 would fill: the lowest Priority when priorities are given; for spot with a market set,
    by the allocation strategy; else the first (nodeflow's overrides come cheapest first)."""
    specs = list(fleet.launch_specs)
    open_specs = [sp for sp in specs
                  if (t := _target(fleet, sp)) is None or moto_reservations.room(fleet.ec2_backend, t)]
    specs = open_specs or specs  # a reservation with no room is skipped (all full: answered before, in create_fleet)
    with_priority = [s for s in specs if (s.overrides or {}).get("Priority") is not None]
    if with_priority:
        return min(with_priority, key=lambda s: float(s.overrides["Priority"]))
    priced = [(s, _MARKET[_pool(s)]) for s in specs if _pool(s) in _MARKET] if lifecycle == "spot" else []
    if not priced:
        return specs[0]
    if (fleet.spot_options or {}).get("AllocationStrategy") == "price-capacity-optimized":
        deepest = max(depth for _, (_, depth) in priced)
        priced = [(s, m) for s, m in priced if m[1] >= DEEP_SHARE * deepest]
    return min(priced, key=lambda p: p[1][0])[0]


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
    target = moto_reservations.target_of(data)
    if target:
        moto_reservations.launched(target, instance.id)
    profile = data.get("IamInstanceProfile") or {}
    if profile.get("Name") or profile.get("Arn"):
        backend.associate_iam_instance_profile(instance_id=instance.id, iam_instance_profile_name=profile.get("Name"),
                                               iam_instance_profile_arn=profile.get("Arn"))
    return instance


def _target(fleet: Any, spec: Any) -> str | None:
    data = fleet.ec2_backend._get_template_from_args(spec.launch_template_spec).data
    return moto_reservations.target_of(data)


def _launcher(original: Any, lifecycle: str) -> Any:
    def launch(self: Any, weight_to_add: float) -> Any:
        if self.fleet_type != "instant":
            return original(self, weight_to_add)
        launched = self.__dict__.setdefault("nodeflow_launched", [])
        spec = _choose(self, lifecycle)
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
            full = moto_reservations.full_answer(self.ec2_backend, self._get_param("LaunchTemplateConfigs", []))
            if full is not None:  # every targeted reservation is used up: EC2's errors, no fleet, no instance
                return ActionResult({**full, "FleetId": f"fleet-{token or 'none'}"[:64]})
            answer = original(self)
            if token:
                _TOKENS[key] = answer.result["FleetId"]
            return answer
    create_fleet.__wrapped_fleet__ = original  # type: ignore[attr-defined]
    return create_fleet


def _control(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """PUT: replace the market (JSON {"pools": [{"type", "zone", "price", "capacity"}]}); DELETE: none; GET: it."""
    method = environ.get("REQUEST_METHOD", "GET")
    with _LOCK:
        if method in ("PUT", "POST"):
            doc = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
            _MARKET.clear()
            _MARKET.update({(p["type"], p["zone"]): (float(p["price"]), float(p["capacity"]))
                            for p in doc.get("pools") or []})
        elif method == "DELETE":
            _MARKET.clear()
        body = json.dumps({"pools": [{"type": t, "zone": z, "price": p, "capacity": c}
                                     for (t, z), (p, c) in _MARKET.items()]}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def set_spot_market(endpoint: str, pools: list[dict[str, Any]]) -> dict[str, Any]:
    """The tests' and benches' side: replace the stand-in's spot market."""
    req = urllib.request.Request(endpoint.rstrip("/") + PATH, data=json.dumps({"pools": pools}).encode(),
                                 method="PUT", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def _route_control() -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = getattr(DomainDispatcherApplication.__call__, "__wrapped_market__", DomainDispatcherApplication.__call__)

    def __call__(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == PATH:
            return _control(environ, start_response)
        return original(self, environ, start_response)

    __call__.__wrapped_market__ = original  # type: ignore[attr-defined]
    DomainDispatcherApplication.__call__ = __call__  # type: ignore[method-assign]


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
    _route_control()
    moto_reservations.install()
    moto_dispatch.install()
    moto_run_token.install()  # RunInstances answers a repeated ClientToken as EC2 does, like CreateFleet above


def main(argv: list[str] | None = None) -> None:
    startup_gc.pause()  # moto loads with no cyclic collection
    install()
    moto_tags.install()  # the same answers as moto as shipped, without a scan of every tag per resource
    moto_parse.install()  # moto's own parse of each request, without a scan of every parameter per structure
    moto_instances.install()  # moto's own instances, without a copy of every reservation per lookup
    import moto.server

    startup_gc.resume()
    moto.server.main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
