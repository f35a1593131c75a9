"""Safety counts over a finished run, shared by the demo report, the chaos suite and the soak benchmark: leaked
instances, stuck finalizers, duplicate launches, termination runs per machine, workflows that failed, PDB
violations outside the grace-deadline path. Plain dicts from boto3 / the Kubernetes API, and Temporal visibility.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus

from api import launch_templates
from api.labels import NODECLAIM_TAG, NODECLAIM_UID_TAG  # the uid tag: only our launches carry it (and a ClientToken)
from api.provider_id import instance_id_from_provider_id
from contracts.termination import TerminationInput

BAD_STATUSES = (WorkflowExecutionStatus.FAILED, WorkflowExecutionStatus.TIMED_OUT,
                WorkflowExecutionStatus.TERMINATED)


def _tags(instance: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance.get("Tags") or []}


def provider_instance_ids(objects: list[dict[str, Any]]) -> set[str]:
    """Instance ids named by Nodes (spec.providerID) and NodeClaims (status.providerID)."""
    out: set[str] = set()
    for obj in objects:
        pid = (obj.get("spec") or {}).get("providerID") or (obj.get("status") or {}).get("providerID")
        iid = instance_id_from_provider_id(pid)
        if iid:
            out.add(iid)
    return out


def leaked_instances(instances: list[dict[str, Any]], nodes: list[dict[str, Any]],
                     claims: list[dict[str, Any]]) -> list[str]:
    """Running or pending instances that no NodeClaim and no Node accounts for: money spent on nothing."""
    known = provider_instance_ids([*nodes, *claims])
    claim_names = {(c.get("metadata") or {}).get("name") for c in claims}
    leaked = []
    for inst in instances:
        if inst["State"]["Name"] not in ("pending", "running"):
            continue
        owner = _tags(inst).get(NODECLAIM_TAG)
        if inst["InstanceId"] in known or (owner and owner in claim_names):
            continue
        leaked.append(inst["InstanceId"])
    return leaked


def leaked_launch_templates(templates: list[dict[str, Any]], node_classes: list[dict[str, Any]],
                            cluster: str) -> list[str]:
    """nodeflow's launch templates of `cluster` (DescribeLaunchTemplates) whose EC2NodeClass no longer exists:
    nothing would delete them any more. A class still deleting counts as gone only once its object is."""
    names = [(c.get("metadata") or {}).get("name", "") for c in node_classes]
    return launch_templates.leaked(templates, cluster, names)


def stuck_finalizers(nodes: list[dict[str, Any]], claims: list[dict[str, Any]]) -> list[str]:
    """Objects still deleting (finalizer not removed) when the run has settled."""
    return [f"{kind}/{(o.get('metadata') or {}).get('name')}" for kind, objs in (("node", nodes), ("nodeclaim", claims))
            for o in objs if (o.get("metadata") or {}).get("deletionTimestamp")]


def duplicate_launches(instances: list[dict[str, Any]]) -> list[str]:
    """NodeClaims with more than one instance, and ClientTokens of our launches used by more than one instance
    (every instance moto still lists, terminated ones included). An instance a CreateFleet launched carries no
    ClientToken of its own (the fleet request holds it): it is counted by its NodeClaim alone."""
    tags = [_tags(i) for i in instances]
    per_claim = Counter(t[NODECLAIM_TAG] for t in tags if NODECLAIM_TAG in t)
    per_token = Counter(i["ClientToken"] for i, t in zip(instances, tags, strict=True)
                        if NODECLAIM_UID_TAG in t and i.get("ClientToken"))
    return sorted([c for c, k in per_claim.items() if k > 1] + [str(t) for t, k in per_token.items() if k > 1])


def our_launches(instances: list[dict[str, Any]]) -> int:
    """Instances nodeflow launched (replacements, provisioning, pre-spin), whatever their state now."""
    return sum(1 for i in instances if NODECLAIM_UID_TAG in _tags(i))


def our_launches_by_zone(instances: list[dict[str, Any]]) -> dict[str, int]:
    """our_launches by the instance's availability zone (the demo's report shows where it launched)."""
    zones = Counter((i.get("Placement") or {}).get("AvailabilityZone", "") for i in instances
                    if NODECLAIM_UID_TAG in _tags(i))
    return dict(sorted(zones.items()))


def pdb_violations(stats: dict[str, Any]) -> dict[str, int]:
    """The simulator ledger's PDB violations by cause, without the grace-deadline path (allowed by design)."""
    return {c: n for c, n in (stats.get("pdbViolations") or {}).items() if c != "grace-deadline" and n}


async def termination_runs_per_machine(client: Client, machine_of: Callable[[TerminationInput], str],
                                       query: str = "WorkflowType='TerminationWorkflow'") -> Counter[str]:
    """TerminationWorkflow runs (every status) per machine, from each run's start input."""
    per_machine: Counter[str] = Counter()
    async for w in client.list_workflows(query):
        history = await client.get_workflow_handle(w.id, run_id=w.run_id).fetch_history()
        payloads = history.events[0].workflow_execution_started_event_attributes.input.payloads
        (inp,) = await client.data_converter.decode(payloads, [TerminationInput])
        per_machine[machine_of(inp)] += 1
    return per_machine


async def bad_workflows(client: Client, query: str = "") -> list[str]:
    """Every execution that failed, timed out or was terminated: "<type> <id> <status>"."""
    return sorted([f"{w.workflow_type} {w.id} {w.status.name}" async for w in client.list_workflows(query or None)
                   if w.status in BAD_STATUSES and w.status is not None])
