"""The worker's instance-type catalog source (runtime/settings.py Deps.catalog_source): `--catalog` wins, discovery
(gateways/instance_types.py) otherwise, refreshed in the background, and every pass resolves the catalog in force
through planning.pricing.unavailable_offerings.with_unavailable."""

from __future__ import annotations

import time
from pathlib import Path

import boto3
import yaml

from activities.planning_runner import PlanningActivities
from api.catalog import DEFAULT_CATALOG_PATH, InstanceTypeCatalog, load_default_catalog
from gateways.instance_types import LiveCatalog
from planning.pricing.unavailable_offerings import UnavailableOfferings, with_unavailable
from runtime.cloud_clients import pricing_client
from runtime.settings import Deps, Settings


def test_catalog_flag_wins_and_no_discovery_means_the_bundled_catalog(tmp_path: Path) -> None:
    doc = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text())
    doc["instanceTypes"] = doc["instanceTypes"][:2]
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(doc))
    deps = Deps(kube_api=None, ec2=object(), settings=Settings(catalog_path=str(path), discover_instance_types=True))
    assert isinstance(deps.catalog_source, InstanceTypeCatalog) and len(deps.catalog_source.instance_types) == 2
    assert Deps(kube_api=None, ec2=object()).catalog_source is load_default_catalog()


def test_pricing_client_is_the_partitions_endpoint_region() -> None:
    assert pricing_client("eu-west-1", None).meta.region_name == "us-east-1"
    assert pricing_client("cn-north-1", None).meta.region_name == "cn-northwest-1"


def test_discovered_catalog_reaches_every_pass_once_refreshed(cloud_endpoint: str) -> None:
    ec2 = boto3.client("ec2", region_name="eu-west-1", endpoint_url=cloud_endpoint)
    deps = Deps(kube_api=None, ec2=ec2, pricing=pricing_client("eu-west-1", cloud_endpoint),
                settings=Settings(discover_instance_types=True, vm_memory_overhead_percent=0.05))
    source = deps.catalog_source
    assert isinstance(source, LiveCatalog) and deps.catalog_source is source  # one per worker
    # the refresh runs in a thread: a pass before it ends plans on the bundled catalog, never waits
    deadline = time.monotonic() + 240
    while source.provider.last_error is None and source.current().region is None:
        assert time.monotonic() < deadline, "discovery did not finish"
        time.sleep(1)
    source.provider.stop()
    current = with_unavailable(source, UnavailableOfferings())
    assert isinstance(current, InstanceTypeCatalog) and current.region == "eu-west-1"
    assert current.vm_memory_overhead_percent == 0.05
    assert with_unavailable(source, None) is current  # resolved also without the cache
    planning = PlanningActivities(None, None, source)  # type: ignore[arg-type]
    assert planning._catalog_for(None) is current
    assert {o.zone for o in current.get("c5.large").offerings} == {"eu-west-1a", "eu-west-1b", "eu-west-1c"}


def test_worker_flags_for_discovery() -> None:
    import worker

    args = worker.parse_args([])
    assert (args.catalog, args.no_instance_type_discovery) == (None, False)
    assert (args.instance_type_refresh, args.vm_memory_overhead_percent) == (12 * 3600.0, 0.075)
    args = worker.parse_args(["--instance-type-refresh", "90m", "--vm-memory-overhead-percent", "0.05",
                              "--no-instance-type-discovery"])
    assert (args.instance_type_refresh, args.vm_memory_overhead_percent) == (5400.0, 0.05)
    assert args.no_instance_type_discovery
