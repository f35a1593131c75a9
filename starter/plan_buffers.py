"""The CAPACITY BUFFERS section of `nodeflow plan -o table` (rows: planning/planner/buffer_report.py)."""

from __future__ import annotations

from typing import Any


def render_buffers(rows: list[dict[str, Any]]) -> list[str]:
    """The table view: one line per buffer, then where its chunks are."""
    if not rows:
        return []
    out = [f"CAPACITY BUFFERS ({len(rows)})"]
    for r in rows:
        held = ", ".join(f"{node} x{n}" for node, n in r["existing"].items()) or "none"
        out.append(f"{r['buffer']}: {r['replicas']} chunk(s), {r['reason']}; kept on {held}; new NodeClaims "
                   f"{r['new']}; no place {r['failed']}" + ("" if r["ready"] else f" ({r['message']})"))
    return [*out, ""]
