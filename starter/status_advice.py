"""`nodeflow status NODE`: the next step that is right for the node's state.

The state is typed (`NodeState`), decided from the rows `status` collected (their kind, status and phase enums)
and, when no workflow runs for the node, from the cluster; the advice is chosen by that state, never by text.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from contracts.disruption import NO_RETURN_PHASES, DisruptionPhase
from contracts.termination import POINT_OF_NO_RETURN, TerminationPhase
from starter.kubeconfig import api_client
from starter.output import CliError

RUNNING = "RUNNING"
TERMINATION = "Termination"
DISRUPTION = "Disruption"


class NodeState(StrEnum):
    TERMINATING = "Terminating"  # a TerminationWorkflow runs, before the instance is terminated
    TERMINATING_INSTANCE = "TerminatingInstance"  # ... past its point of no return
    IN_DISRUPTION = "InDisruption"  # a DisruptionWorkflow that includes it runs, before its point of no return
    DISRUPTION_ROLLING_BACK = "DisruptionRollingBack"  # ... being rolled back, or a cancel is on its way
    DISRUPTION_NO_RETURN = "DisruptionPastNoReturn"  # ... Terminating: its nodes are handed to termination
    FINISHED = "Finished"  # no workflow runs; the latest one finished
    DELETING = "Deleting"  # no workflow at all, and the node has a deletionTimestamp
    IN_CLUSTER = "InCluster"  # no workflow at all, and the node is there, not being deleted
    UNKNOWN = "Unknown"  # no workflow, and the cluster does not have it (or cannot be read)


class ClusterNode(StrEnum):
    PRESENT = "Present"
    DELETING = "Deleting"
    ABSENT = "Absent"
    UNKNOWN = "Unknown"


def running_state(rows: list[dict[str, Any]]) -> NodeState | None:
    """The state a running workflow gives the node; a termination counts before the disruption that started it."""
    running = [r for r in rows if r.get("status") == RUNNING]
    term = next((r for r in running if r.get("kind") == TERMINATION), None)
    if term is not None:
        return NodeState.TERMINATING_INSTANCE if _termination_phase(term) in POINT_OF_NO_RETURN \
            else NodeState.TERMINATING
    disruption = next((r for r in running if r.get("kind") == DISRUPTION), None)
    if disruption is None:
        return None
    phase = _disruption_phase(disruption)
    if phase in NO_RETURN_PHASES:
        return NodeState.DISRUPTION_NO_RETURN
    if phase == DisruptionPhase.ROLLING_BACK or disruption.get("cancelRequested"):
        return NodeState.DISRUPTION_ROLLING_BACK
    return NodeState.IN_DISRUPTION


def _disruption_phase(row: dict[str, Any]) -> DisruptionPhase | None:
    try:
        return DisruptionPhase(row.get("phase"))
    except ValueError:
        return None


def _termination_phase(row: dict[str, Any]) -> TerminationPhase | None:
    try:
        return TerminationPhase(row.get("phase"))
    except ValueError:
        return None


def advice(node: str, state: NodeState, row: dict[str, Any] | None = None, all_shown: bool = False) -> str | None:
    """One or two sentences for stderr: what to do about NODE now. `row` is the workflow the state came from;
    `all_shown`: finished workflows are listed already (`--all`), so the hint to add it is left out."""
    row = row or {}
    match state:
        case NodeState.TERMINATING:
            return (f"{node} is being terminated ({row.get('phase')}): `nodeflow force {node} --reason TEXT` evicts "
                    f"past PDBs and do-not-disrupt pods; `nodeflow cancel {node}` stops it and untaints the node "
                    "(not for a node someone deleted)")
        case NodeState.TERMINATING_INSTANCE:
            return (f"{node}'s instance is being terminated ({row.get('phase')}): past the point of no return, "
                    "nothing to force or cancel; it finishes on its own")
        case NodeState.IN_DISRUPTION:
            return (f"{node} is part of disruption {row.get('workflowId')} ({row.get('phase')}): wait for it, or "
                    f"`nodeflow cancel {node}` rolls it back (before the point of no return: untainted, "
                    "replacements not yet Ready deleted)")
        case NodeState.DISRUPTION_ROLLING_BACK:
            return (f"{node} is part of disruption {row.get('workflowId')}, which is being cancelled or rolled back: "
                    "wait; the node is untainted when it ends")
        case NodeState.DISRUPTION_NO_RETURN:
            return (f"{node} is part of disruption {row.get('workflowId')} ({row.get('phase')}), past the point of "
                    "no return: it can no longer be cancelled; its termination shows here once it starts")
        case NodeState.FINISHED:
            said = f"the {str(row.get('kind', 'workflow')).lower()} of {node} finished ({_ending(row)})"
            return said if all_shown else \
                f"{said}; `nodeflow status {node} --all` shows finished terminations and disruptions"
        case NodeState.DELETING:
            return (f"node {node} is being deleted but no termination runs for it; the worker's watcher starts one "
                    "(is a nodeflow worker running?)")
        case NodeState.IN_CLUSTER:
            return (f"node {node} is in the cluster and not being terminated; "
                    f"`kubectl delete node {node} --wait=false` starts its termination")
    return None


def _ending(row: dict[str, Any]) -> str:
    parts = [str(row.get("status") or "FINISHED")]
    if row.get("phase"):
        parts.append(f"phase {row['phase']}")
    closed = row.get("closedAt")
    if closed:
        parts.append(f"at {datetime.fromisoformat(closed).strftime('%Y-%m-%dT%H:%M:%SZ')}")
    return ", ".join(parts)


def cluster_node(kubeconfig: str | None, node: str, context: str | None = None) -> ClusterNode:
    """Whether the resolved kubeconfig's cluster has NODE, and whether it is being deleted; problems reading it
    are warnings (the answer is then UNKNOWN)."""
    import sys

    from kubernetes import client as k8s


    if not kubeconfig:
        return ClusterNode.UNKNOWN
    try:
        api = api_client(kubeconfig, context)
    except CliError as exc:
        print(f"warning: {exc}; searching Temporal by node name", file=sys.stderr)
        return ClusterNode.UNKNOWN
    try:
        got = k8s.CoreV1Api(api).read_node(node, _request_timeout=5)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return ClusterNode.ABSENT
        print(f"warning: reading node {node} from {api.configuration.host}: {exc.status} {exc.reason}",
              file=sys.stderr)
        return ClusterNode.UNKNOWN
    except Exception as exc:  # unreachable server, TLS, auth plugin
        print(f"warning: cannot reach the cluster at {api.configuration.host} ({type(exc).__name__})",
              file=sys.stderr)
        return ClusterNode.UNKNOWN
    finally:
        api.close()
    return ClusterNode.DELETING if got.metadata.deletion_timestamp else ClusterNode.PRESENT


def idle_state(finished: dict[str, Any] | None, cluster: ClusterNode) -> NodeState:
    """No workflow runs for the node: a finished one is named first, else the cluster decides."""
    if finished is not None:
        return NodeState.FINISHED
    return {ClusterNode.PRESENT: NodeState.IN_CLUSTER, ClusterNode.DELETING: NodeState.DELETING}.get(
        cluster, NodeState.UNKNOWN)

