"""`nodeflow plan`'s view of the DisruptionPolicies' cost limits and expiry jitter (docs/semantics.md §15.10,
§15.12): the `costLimits` and `expiry` keys of its JSON and their tables."""

from __future__ import annotations

from typing import Any

from starter.output import render_table


def render_cost_limits(rows: list[dict[str, Any]]) -> list[str]:
    """Each cost-limited group of pools: its limit, what it costs, what the plan launches in it, the headroom."""
    if not rows:
        return []
    table = [[r["policy"], ", ".join(r["nodePools"]) or "-", f"${r['limit']}/h", f"${r['used']:.4f}/h",
              f"${r['planned']:.4f}/h", f"${r['headroom']:.4f}/h"] for r in rows]
    return [f"COST LIMITS ({len(rows)})",
            render_table(["POLICY", "NODEPOOLS", "LIMIT", "USED", "PLANNED", "HEADROOM"], table).rstrip(), ""]


def render_expiry(rows: list[dict[str, Any]]) -> list[str]:
    """Each expiring or jittered node's effective expiry, soonest first."""
    if not rows:
        return []
    table = [[r["node"], r["nodePool"], r["expiresAt"] or "never", r["gracefulFrom"] or "-", r["jitter"] or "-",
              f"{r['earlierBySeconds'] / 3600:.1f}h"] for r in rows]
    return [f"EXPIRY ({len(rows)})",
            render_table(["NODE", "NODEPOOL", "EXPIRES", "GRACEFUL FROM", "JITTER", "EARLIER BY"], table).rstrip(),
            ""]
