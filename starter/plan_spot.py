"""`nodeflow plan`'s view of spot fallbacks and zone balance (docs/semantics.md §15.5-15.6): the `spotFallbacks` and
`zoneBalance` keys of its JSON and their tables."""

from __future__ import annotations

from typing import Any

from starter.output import render_table


def render_spot_fallbacks(rows: list[dict[str, Any]]) -> list[str]:
    """Each node launched on-demand because spot had no capacity: since when, when it may return, what happens."""
    if not rows:
        return []
    table = [[r["node"], r["nodePool"], r["since"], r["returnAt"] or "never", r["state"], r["reason"] or ""]
             for r in rows]
    return [f"SPOT FALLBACKS ({len(rows)})",
            render_table(["NODE", "NODEPOOL", "SINCE", "RETURN AT", "STATE", "REASON"], table).rstrip(), ""]


def render_zone_balance(rows: list[dict[str, Any]]) -> list[str]:
    """Each pool with a zoneBalance: its nodes per zone and the spread against the allowed one."""
    if not rows:
        return []
    table = [[r["nodePool"], " ".join(f"{z}={n}" for z, n in r["nodesByZone"].items()) or "-", r["spread"],
              r["zoneBalance"]] for r in rows]
    return [f"ZONE BALANCE ({len(rows)})",
            render_table(["NODEPOOL", "NODES BY ZONE", "SPREAD", "ALLOWED"], table).rstrip(), ""]
