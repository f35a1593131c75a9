"""The instance-type catalog discovered from the cloud, refreshed in the background of every read.

`InstanceTypeProvider` is what the worker's activities get instead of a fixed catalog when no `--catalog` is given:
calling it (or `.catalog()`) returns the current catalog, so each pass reads the one in force. Every `refresh`
seconds (12 h by default, Karpenter's pricing and instance-type refresh) it reads the region again
(gateways/instance_discovery.py) and builds the catalog (api/instance_types/build.py). A failed refresh keeps the
last good catalog, logs a warning and counts it (`nodeflow_instance_type_refreshes_total{result="failed"}`); before
any success the bundled catalog stands in. On-demand prices fall back to the bundled price table (api/price_table.py)
when the Pricing API cannot be reached, then to the bundled catalog's prices. docs/semantics.md "Instance types and
allocatable".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from api import price_table
from api.catalog import InstanceTypeCatalog, load_default_catalog
from api.instance_types.build import build_catalog
from api.quantity import parse_quantity
from gateways.instance_discovery import describe_instance_types, describe_offerings, on_demand_prices, spot_prices
from telemetry import karpenter_metrics as km
from telemetry.metrics import INSTANCE_TYPE_PRICE_FALLBACKS, INSTANCE_TYPE_REFRESHES, INSTANCE_TYPES_DISCOVERED

log = logging.getLogger(__name__)

DEFAULT_REFRESH_SECONDS = 12 * 3600.0
FAILED_RETRY_SECONDS = 300.0  # after a failed refresh, try again this soon (not a whole period on stale data)
PRICING_REGION = "us-east-1"  # the Pricing API's endpoint region for the commercial partition (Karpenter's choice)


def _catalog_prices(catalog: InstanceTypeCatalog) -> dict[str, float]:
    """The cheapest on-demand price of each type in a catalog (the last fallback for on-demand prices)."""
    out: dict[str, float] = {}
    for it in catalog.instance_types:
        prices = [o.price for o in it.offerings if o.capacity_type == "on-demand"]
        if prices:
            out[it.name] = min(prices)
    return out


class InstanceTypeProvider:
    """Clients come in: an EC2 client (its region is the catalog's) and, optionally, a Pricing client."""

    def __init__(self, ec2: Any, pricing: Any | None = None, *, refresh_seconds: float = DEFAULT_REFRESH_SECONDS,
                 overhead_percent: float = 0.075, zones: set[str] | None = None,
                 clock: Callable[[], float] = time.monotonic, progress: Callable[[str], None] | None = None) -> None:
        self._ec2 = ec2
        self._pricing = pricing
        self.region: str = ec2.meta.region_name
        self._refresh = refresh_seconds
        self._overhead = overhead_percent
        self._zones = zones
        self._clock = clock
        self._progress = progress or (lambda _msg: None)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._current: InstanceTypeCatalog | None = None
        self._spot: dict[tuple[str, str], float] = {}
        self._at: float | None = None  # clock time of the last attempt, good or not
        self.last_error: str | None = None
        self.price_source = ""  # pricing-api | price-table | bundled-catalog

    def __call__(self) -> InstanceTypeCatalog:
        return self.catalog()

    def catalog(self) -> InstanceTypeCatalog:
        """The current catalog. Without a background refresher, refreshed first when the last attempt is older than
        the refresh period (the CLI); with one, never waits: the bundled catalog until the first success."""
        if self._thread is not None:
            current = self._current
            return current if current is not None else load_default_catalog()
        with self._lock:
            if self._at is None or self._clock() - self._at >= self._period():
                self._refresh_locked()
            return self._current if self._current is not None else load_default_catalog()

    def _period(self) -> float:
        """The refresh period, shorter after a failure."""
        return self._refresh if self.last_error is None else min(self._refresh, FAILED_RETRY_SECONDS)

    def start(self) -> None:
        """Refresh now and every period in a daemon thread (the worker: no activity waits for a discovery)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="instance-type-refresh", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.refresh()
            self._stopping.wait(self._period())

    def refresh(self) -> bool:
        """Read the region now; False (the last good catalog kept) when EC2 could not be read."""
        with self._lock:
            return self._refresh_locked()

    def _refresh_locked(self) -> bool:
        self._at = self._clock()
        try:
            catalog = self._discover()
        except Exception as exc:  # any client or parse error: keep serving what we had
            self.last_error = f"{type(exc).__name__}: {exc}"
            INSTANCE_TYPE_REFRESHES.labels(result="failed").inc()
            log.warning("instance-type refresh in %s failed, keeping the %s catalog: %s", self.region,
                        "last discovered" if self._current is not None else "bundled", self.last_error)
            return False
        self._current, self.last_error = catalog, None
        INSTANCE_TYPE_REFRESHES.labels(result="ok").inc()
        INSTANCE_TYPES_DISCOVERED.set(len(catalog.instance_types))
        karpenter_instance_types(catalog)
        log.info("instance types of %s discovered: %d types, on-demand prices from %s", self.region,
                 len(catalog.instance_types), self.price_source)
        return True

    def _discover(self) -> InstanceTypeCatalog:
        self._progress(f"DescribeInstanceTypes in {self.region}")
        items = describe_instance_types(self._ec2)
        self._progress(f"DescribeInstanceTypeOfferings ({len(items)} types)")
        zones = describe_offerings(self._ec2, self._zones)
        self._progress("on-demand prices")
        on_demand = self._on_demand()
        self._progress("spot price history")
        try:
            self._spot = spot_prices(self._ec2)
        except Exception as exc:  # keep the last spot prices (or on-demand ones) rather than no catalog
            INSTANCE_TYPE_PRICE_FALLBACKS.labels(prices="spot", source="last-known").inc()
            log.warning("DescribeSpotPriceHistory in %s failed, keeping the last spot prices: %s", self.region, exc)
        return build_catalog(self.region, items, zones, on_demand, self._spot, self._overhead,
                             metadata={"name": f"discovered-{self.region}", "onDemandPrices": self.price_source})

    def _on_demand(self) -> dict[str, float]:
        """Pricing API, else the bundled price table, else the bundled catalog's prices."""
        if self._pricing is not None:
            try:
                prices = on_demand_prices(self._pricing, self.region)
                if prices:
                    self.price_source = "pricing-api"
                    return prices
            except Exception as exc:  # unreachable or refused: the bundled table is the documented fallback
                log.warning("Pricing API unreachable, using the bundled price table (%s): %s",
                            price_table.table_date(), exc)
        table = price_table.region_prices(self.region)
        if table:
            self.price_source = f"price-table {price_table.table_date()}"
            INSTANCE_TYPE_PRICE_FALLBACKS.labels(prices="on-demand", source="price-table").inc()
            return table
        self.price_source = "bundled-catalog"
        INSTANCE_TYPE_PRICE_FALLBACKS.labels(prices="on-demand", source="bundled-catalog").inc()
        return _catalog_prices(load_default_catalog())


class LiveCatalog:
    """What activities hold instead of a fixed InstanceTypeCatalog when the catalog is discovered: `current()` (or
    calling it) is the catalog in force now. api.catalog.current_catalog resolves it once per pass (the planner,
    provisioning and interruption paths go through planning.pricing.unavailable_offerings.with_unavailable, which does);
    the read-only attributes below delegate for code that reads the catalog directly (a launch's `get`)."""

    def __init__(self, provider: InstanceTypeProvider) -> None:
        self.provider = provider

    def current(self) -> InstanceTypeCatalog:
        return self.provider.catalog()

    def __call__(self) -> InstanceTypeCatalog:
        return self.current()

    def get(self, name: str) -> Any:
        return self.current().get(name)

    @property
    def instance_types(self) -> list[Any]:
        return self.current().instance_types

    @property
    def by_name(self) -> dict[str, Any]:
        return self.current().by_name

    @property
    def vm_memory_overhead_percent(self) -> float:
        return self.current().vm_memory_overhead_percent

    @property
    def region(self) -> str | None:
        return self.current().region


def karpenter_instance_types(catalog: InstanceTypeCatalog) -> None:
    """The provider's instance-type gauges from a refreshed catalog (pkg/controllers/metrics,
    pkg/providers/instancetype/metrics.go): vCPUs, memory bytes, each offering's availability and price. They are
    read from this catalog when scraped (telemetry/karpenter_metrics.py InstanceTypeGauges), not copied."""
    km.INSTANCE_TYPES.set_source(lambda: _type_rows(catalog))


def _type_rows(catalog: InstanceTypeCatalog) -> Iterator[km.TypeRow]:
    for it in catalog.instance_types:
        yield km.TypeRow(it.name, float(parse_quantity(it.cpu)), float(parse_quantity(it.memory)),
                         ((o.capacity_type, o.zone, o.available, o.price) for o in it.offerings))
