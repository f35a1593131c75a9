"""What the demo measures: cluster cost, the live view, and the final safety report (docs/contracts.md §4)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from api import labels as L
from api.catalog import InstanceTypeCatalog
from api.interruption import TERMINATION_REASONS

METHODS = ("Emptiness", "Drift", "MultiNodeConsolidation", "SingleNodeConsolidation", "Expiration", "Interruption")


def node_price(node: dict[str, Any], catalog: InstanceTypeCatalog) -> float:
    lab = (node.get("metadata") or {}).get("labels") or {}
    it = catalog.get(lab.get(L.INSTANCE_TYPE_LABEL, ""))
    if it is None:
        return 0.0
    off = it.offering(lab.get(L.ZONE_LABEL, ""), lab.get(L.CAPACITY_TYPE_LABEL, "on-demand"))
    return off.price if off else 0.0


def cost_per_hour(nodes: list[dict[str, Any]], catalog: InstanceTypeCatalog) -> float:
    return round(sum(node_price(n, catalog) for n in nodes), 4)


def node_states(nodes: list[dict[str, Any]]) -> Counter[str]:
    """Ready / NotReady / Deleting / Disrupting (tainted karpenter.sh/disrupted)."""
    out: Counter[str] = Counter()
    for n in nodes:
        meta = n.get("metadata") or {}
        taints = (n.get("spec") or {}).get("taints") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (n.get("status") or {}).get("conditions") or [])
        if meta.get("deletionTimestamp"):
            out["Deleting"] += 1
        elif any(t.get("key") == L.DISRUPTED_TAINT_KEY for t in taints):
            out["Disrupting"] += 1
        else:
            out["Ready" if ready else "NotReady"] += 1
    return out


@dataclass
class WorkflowTally:
    """What the demo's workflows did: commands started by method, how the disruptions ended, terminations."""

    commands_by_method: Counter[str] = field(default_factory=Counter)
    outcomes_by_method: dict[str, Counter[str]] = field(default_factory=dict)
    terminated_by_reason: Counter[str] = field(default_factory=Counter)

    @property
    def nodes_terminated(self) -> int:
        return sum(self.terminated_by_reason.values())


def tally_workflows(disruptions: Iterable[tuple[str, str]], terminations: Iterable[tuple[str, str]]) -> WorkflowTally:
    """Count from (static summary, final phase) of each DisruptionWorkflow run and (reason, status) of each
    TerminationWorkflow. A disruption counts for the method its summary names ("Drift general-09") whatever
    its outcome, which is reported next to it; expirations and interruptions are terminations the planner or
    the interruption intake started directly, counted by their reason. Only completed terminations count as
    nodes terminated."""
    out = WorkflowTally()
    for summary, phase in disruptions:
        method = (summary or "").split(" ")[0] or "unknown"
        out.commands_by_method[method] += 1
        out.outcomes_by_method.setdefault(method, Counter())[phase or "Running"] += 1
    interruption_reasons = set(TERMINATION_REASONS.values())
    for reason, status in terminations:
        if reason == L.REASON_EXPIRED:
            out.commands_by_method["Expiration"] += 1
        elif reason in interruption_reasons:
            out.commands_by_method["Interruption"] += 1
        if status == "COMPLETED":
            out.terminated_by_reason[reason or "unknown"] += 1
    return out


def render_live(elapsed: float, states: Counter[str], workflows: Counter[str], cost: float, cost_before: float,
                ui_url: str | None, note: str = "", recent: Iterable[str] = ()) -> str:
    """The live view's block: nodes by state, workflows in flight, cost, and the latest workflows started."""
    ns = "  ".join(f"{k} {states.get(k, 0)}" for k in ("Ready", "Disrupting", "Deleting", "NotReady"))
    wf = "  ".join(f"{k.removesuffix('Workflow')} {v}" for k, v in sorted(workflows.items())) or "none"
    saved = cost_before - cost
    trend = f", saving ${saved:.3f}/h" if saved > 0.0005 else ""
    lines = [f"[{elapsed:5.0f}s] nodes: {ns}  (total {sum(states.values())})",
             f"        in flight: {wf}",
             f"        cost/hour: ${cost:.3f} (was ${cost_before:.3f}{trend})"]
    recent = list(recent)
    if recent:
        lines.append("        latest:    " + recent[0])
        lines += [f"                   {r}" for r in recent[1:]]
    if ui_url:
        lines.append(f"        Temporal UI: {ui_url}")
    if note:
        lines.append(f"        {note}")
    return "\n".join(lines)


def describe_workflow(workflow_type: str, node: str, reason: str, phase: str, summary: str = "",
                      pool: str = "") -> str:
    """One line of the live view's `latest` list, e.g. `Drift general-09: Terminating` or
    `provision 4 pending pod(s) in spot: WaitingReady`, whole: the live screen fits it to the terminal."""
    if workflow_type == "TerminationWorkflow":
        what = f"terminate {node} ({reason})" if reason else f"terminate {node}"
    elif workflow_type == "DisruptionWorkflow":
        what = summary or f"disrupt {node} ({reason})"
    elif workflow_type == "ProvisioningWorkflow":
        what = (summary or "provision pending pods") + (f" in {pool}" if pool else "")
    else:
        what = summary or f"{workflow_type.removesuffix('Workflow')} {node}".strip()
    return f"{what}: {phase}" if phase else what


def disruption_phase_shown(phase: str, termination_phases: Iterable[str]) -> str:
    """The phase the live view shows for a DisruptionWorkflow: a disruption hands its nodes to terminations and
    ends Succeeded when they close, even when `nodeflow cancel NODE` cancelled them (cancel reaches the node's
    termination first). Cancelled when every termination was; else Succeeded with how many were."""
    if phase != "Succeeded":
        return phase
    phases = list(termination_phases)
    cancelled = sum(1 for p in phases if p == "Cancelled")
    if phases and cancelled == len(phases):
        return "Cancelled"
    return f"{phase} ({cancelled} of {len(phases)} terminations cancelled)" if cancelled else phase


def pending_pods(pods: Iterable[dict[str, Any]]) -> list[str]:
    """`namespace/name` of the pods waiting for a node: not bound, not terminating, not finished."""
    out = []
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("nodeName") or meta.get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
            continue
        out.append(f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}")
    return out


def report_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=False) + "\n"
