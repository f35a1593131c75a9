"""Prometheus metrics of nodeflow's decisions, in one module-level registry the worker exposes.

A flat list of metric definitions: each area appends its own counters here, so `/metrics` shows
everything from one registry and names cannot collide.
"""

from prometheus_client import CollectorRegistry, Counter, Gauge

REGISTRY = CollectorRegistry(auto_describe=True)

# --- planner and disruption (issue 5) ---
DISRUPTION_DECISIONS = Counter(
    "nodeflow_disruption_decisions_total",
    "Disruption commands the planner decided to start, by method, reason and decision (delete|replace).",
    ["method", "reason", "decision"],
    registry=REGISTRY,
)
DISRUPTION_OUTCOMES = Counter(
    "nodeflow_disruption_outcomes_total",
    "Disruption commands that finished, by reason and outcome (Succeeded|RolledBack|Invalid|Cancelled).",
    ["reason", "outcome"],
    registry=REGISTRY,
)
DISRUPTION_BLOCKED = Counter(
    "nodeflow_disruption_blocked_total",
    "Nodes the planner found blocked from voluntary disruption, counted once per pass.",
    ["nodepool"],
    registry=REGISTRY,
)
PLANNER_PASSES = Counter(
    "nodeflow_planner_passes_total",
    "Planner passes run, by result (commands|idle|paused).",
    ["result"],
    registry=REGISTRY,
)
PLANNER_ELIGIBLE_NODES = Gauge(
    "nodeflow_planner_cluster_nodes",
    "Nodes seen by the last planner pass.",
    registry=REGISTRY,
)
