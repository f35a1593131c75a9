"""Spot price history for the EC2 stand-in: prices that differ by type, zone and hour, and move over a day.

moto (5.2) answers DescribeSpotPriceHistory with one record per offering, all at "0.00001" and one fixed 2006
timestamp, so a client that picks the cheapest zone, or the latest record, learns nothing. This module plays the
spot market instead, deterministically, so every process (and every test) sees the same prices:

- each (type, zone) has a price change at some hour boundaries: at least every `MAX_GAP_HOURS` hours, plus
  about one hour in five, chosen by a hash of (type, zone, hour);
- the price set at a change is the type's on-demand price times 0.25-0.45: a per-(type, zone) level between
  0.28 and 0.42 plus up to +/-0.03 for that hour, rounded to 4 decimals as EC2 prints spot prices;
- the on-demand reference is the bundled price table's price in that region, else the type's price in
  us-east-1 or any region of the table, else (for a type the table lacks) an estimate from vCPUs and memory
  (USD 0.037 per vCPU-hour and 0.00275 per GiB-hour, m5/c5's us-east-1 rates). Spot prices here are test data,
  never a price nodeflow ships.

A query for [start, end] returns every change inside it and the last change at or before `start`, which is the
price in force at `start` (EC2's documented behaviour; Karpenter asks with StartTime=now to get exactly that).
Records are in chronological order, oldest first, as EC2 documents.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from api import price_table

PRODUCT_DESCRIPTION = "Linux/UNIX"
MAX_GAP_HOURS = 6
CHANGE_PROBABILITY = 0.2
DEFAULT_WINDOW = timedelta(hours=24)
OLDEST = timedelta(days=90)
PER_VCPU_HOUR = 0.037
PER_GIB_HOUR = 0.00275
SUPPORTED_FILTERS = frozenset({"availability-zone", "instance-type", "product-description", "spot-price",
                               "timestamp"})


@dataclass(frozen=True)
class SpotRecord:
    instance_type: str
    zone: str
    price: str
    timestamp: datetime

    def as_api(self) -> dict[str, object]:
        """The record as an EC2 `SpotPrice` structure."""
        return {"InstanceType": self.instance_type, "ProductDescription": PRODUCT_DESCRIPTION,
                "SpotPrice": self.price, "Timestamp": self.timestamp, "AvailabilityZone": self.zone}


def _unit(*parts: object) -> float:
    """A uniform number in [0, 1) fixed by `parts`, the same in every process."""
    digest = hashlib.blake2b("|".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@cache
def _phase(instance_type: str, zone: str) -> int:
    return int(_unit(instance_type, zone, "phase") * MAX_GAP_HOURS)


@cache
def _level(instance_type: str, zone: str) -> float:
    return 0.28 + 0.14 * _unit(instance_type, zone, "level")


def _is_change(instance_type: str, zone: str, hour: int) -> bool:
    if hour % MAX_GAP_HOURS == _phase(instance_type, zone):
        return True
    return _unit(instance_type, zone, hour, "change") < CHANGE_PROBABILITY


def _last_change(instance_type: str, zone: str, hour: int) -> int:
    """The latest change hour at or before `hour` (within MAX_GAP_HOURS, by construction)."""
    while not _is_change(instance_type, zone, hour):
        hour -= 1
    return hour


def spot_price(on_demand: float, instance_type: str, zone: str, change_hour: int) -> str:
    """The price set at `change_hour` (hours since the epoch), as EC2's 4-decimal string."""
    level = _level(instance_type, zone)
    jitter = 0.06 * (_unit(instance_type, zone, change_hour, "jitter") - 0.5)
    return f"{max(0.0001, round(on_demand * (level + jitter), 4)):.4f}"


@cache
def reference_on_demand(region: str, instance_type: str, vcpus: int | None, memory_mib: int | None) -> float | None:
    """The on-demand price that a spot price is a fraction of (see the module docstring for the order)."""
    for where in (region, "us-east-1", *price_table.regions()):
        price = price_table.on_demand_price(where, instance_type)
        if price is not None:
            return price
    if vcpus and memory_mib:
        return round(vcpus * PER_VCPU_HOUR + memory_mib / 1024 * PER_GIB_HOUR, 4)
    return None


def _hour(moment: datetime) -> int:
    return int(moment.timestamp() // 3600)


def _matches(fields: dict[str, str], filters: dict[str, list[str]], names: Iterable[str]) -> bool:
    """EC2 filter semantics: every named filter matches one of its values, `*` and `?` as wildcards."""
    return all(any(fnmatch.fnmatchcase(fields[n], v) for v in filters[n]) for n in names if n in filters)


def _record_fields(record: SpotRecord) -> dict[str, str]:
    return {"product-description": PRODUCT_DESCRIPTION, "spot-price": record.price,
            "timestamp": record.timestamp.strftime("%Y-%m-%dT%H:%M:%S.000Z")}


def select_offerings(offerings: Iterable[tuple[str, str]],
                     filters: dict[str, list[str]]) -> list[tuple[str, str]]:
    """The (type, zone) pairs the zone and type filters let through, before any price is computed."""
    names = ("availability-zone", "instance-type")
    return [(t, z) for t, z in offerings if _matches({"instance-type": t, "availability-zone": z}, filters, names)]


def history(offerings: Iterable[tuple[str, str]], on_demand: Callable[[str], float | None],
            start: datetime, end: datetime, filters: dict[str, list[str]] | None = None) -> list[SpotRecord]:
    """Every price change of each (type, zone) in (start, end], with the one in force at `start`; oldest first."""
    filters = filters or {}
    record_filters = [n for n in ("product-description", "spot-price", "timestamp") if n in filters]
    records: list[SpotRecord] = []
    first_hour, last_hour = _hour(start), _hour(end)
    for instance_type, zone in select_offerings(offerings, filters):
        base = on_demand(instance_type)
        if base is None:
            continue
        hours = [_last_change(instance_type, zone, first_hour)]
        hours += [h for h in range(first_hour + 1, last_hour + 1) if _is_change(instance_type, zone, h)]
        for hour in hours:
            record = SpotRecord(instance_type, zone, spot_price(base, instance_type, zone, hour),
                                datetime.fromtimestamp(hour * 3600, UTC))
            if not record_filters or _matches(_record_fields(record), filters, record_filters):
                records.append(record)
    records.sort(key=lambda r: (r.timestamp, r.instance_type, r.zone))
    return records


def window(start: datetime | None, end: datetime | None, now: datetime) -> tuple[datetime, datetime]:
    """The [start, end] a request asks for: end defaults to (and stops at) now, start to a day before end."""
    end = min(end or now, now)
    start = start or end - DEFAULT_WINDOW
    start = max(min(start, end), now - OLDEST)
    return start, end
