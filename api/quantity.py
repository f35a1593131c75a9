"""Kubernetes resource quantities ("500m", "8Gi", "1e3") as plain numbers.

Planning and the simulator compare requests against capacity many thousands of times, so they work
in floats (cpu cores) and ints (bytes) and parse once at the edge.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
_RE = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a quantity into a Decimal in base units."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int | float):
        return Decimal(str(value))
    text = str(value).strip()
    m = _RE.match(text)
    if not m:
        raise QuantityError(f"invalid quantity {value!r}")
    try:
        number = Decimal(m.group(1))
    except InvalidOperation as exc:
        raise QuantityError(f"invalid quantity {value!r}") from exc
    suffix = m.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    return number * _DECIMAL[suffix]


def parse_cpu(value: str | int | float) -> float:
    """CPU in cores ("250m" -> 0.25)."""
    return float(parse_quantity(value))


def parse_memory(value: str | int | float) -> int:
    """Memory or storage in bytes, rounded up ("1Gi" -> 1073741824)."""
    q = parse_quantity(value)
    i = int(q)
    return i + 1 if q > i else i


def format_cpu(cores: float) -> str:
    """Cores as a quantity string ("0.25" -> "250m")."""
    milli = round(cores * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_memory(n_bytes: int) -> str:
    """Bytes as the largest exact binary quantity ("8589934592" -> "8Gi")."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if n_bytes and n_bytes % unit == 0:
            return f"{n_bytes // unit}{suffix}"
    return str(n_bytes)
