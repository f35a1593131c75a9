"""Turning a parsed interruption event into workflows: instance -> Node, then start or signal its workflows.

The worker's wiring (runtime/wiring.py) gives it to the SQS poller activity (activities/queue.py). Every step is
idempotent, so a redelivered or duplicated message is harmless: terminations use the id `terminate-<node uid>` with
USE_EXISTING, pre-spins `prespin-<node uid>` with USE_EXISTING, and Events get a name derived from the message id.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from activities.events import event_body, recorder_for
from activities.karpenter_metrics import message_type, record_disrupted
from api import labels
from api.catalog import InstanceTypeCatalog
from api.events import (
    INTERRUPTION_MESSAGES,
    EventReason,
    interruption_reason,
    spec_of,
    terminating_on_interruption,
)
from api.instance_types.labels import WELL_KNOWN_TYPE_KEYS
from api.interruption import (
    TERMINATION_REASONS,
    Action,
    InterruptionEvent,
    InterruptionKind,
    action_for,
    rebalance_mode,
)
from api.provider_id import instance_id_from_provider_id
from client.interruption import StartPrespin, StartTermination
from contracts.disruption import EventSpec, Replacement
from contracts.interruption import PrespinInput
from contracts.termination import TerminationInput
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import UnavailableOfferings, UnavailableReason, with_unavailable
from planning.selectors import match_requirement

log = logging.getLogger(__name__)

NO_NODE = "NoNode"
MAX_REPLACEMENT_TYPES = 15

@dataclass(frozen=True)
class NodeInfo:
    """What the intake needs to know about the Node an instance backs."""

    name: str  # "" for a NodeClaim whose instance never registered a Node
    uid: str  # the Node's uid, else the NodeClaim's
    provider_id: str
    node_pool: str | None
    node_claim: str | None
    instance_type: str | None
    capacity_type: str | None
    arch: str | None
    zone: str | None = None


def index_nodes(nodes: list[dict[str, Any]], node_claims: list[dict[str, Any]]) -> dict[str, NodeInfo]:
    """instance id -> NodeInfo, from plain Node and NodeClaim dicts (matched by providerID, then node name)."""
    claim_by_provider: dict[str, str] = {}
    claim_by_node: dict[str, str] = {}
    node_names = {(n.get("metadata") or {}).get("name") for n in nodes}
    out: dict[str, NodeInfo] = {}
    for claim in node_claims:
        status = claim.get("status") or {}
        name = (claim.get("metadata") or {}).get("name")
        if not name:
            continue
        if status.get("providerID"):
            claim_by_provider[status["providerID"]] = name
        if status.get("nodeName"):
            claim_by_node[status["nodeName"]] = name
        instance_id = instance_id_from_provider_id(status.get("providerID"))
        uid = (claim.get("metadata") or {}).get("uid")
        if instance_id and uid and status.get("nodeName") not in node_names:
            # Launched but never registered: no Node to drain; its termination is keyed by the claim's uid,
            # as the deletion watcher does. A Node with this providerID (below) replaces this entry.
            claim_labels = (claim.get("metadata") or {}).get("labels") or {}
            out[instance_id] = NodeInfo(
                name="", uid=uid, provider_id=status["providerID"], node_pool=claim_labels.get(labels.NODEPOOL_LABEL),
                node_claim=name, instance_type=claim_labels.get(labels.INSTANCE_TYPE_LABEL),
                capacity_type=claim_labels.get(labels.CAPACITY_TYPE_LABEL), arch=claim_labels.get(labels.ARCH_LABEL),
                zone=claim_labels.get(labels.ZONE_LABEL))
    for node in nodes:
        meta = node.get("metadata") or {}
        provider_id = (node.get("spec") or {}).get("providerID") or ""
        instance_id = instance_id_from_provider_id(provider_id)
        if not instance_id or not meta.get("name") or not meta.get("uid"):
            continue
        node_labels = meta.get("labels") or {}
        out[instance_id] = NodeInfo(
            name=meta["name"], uid=meta["uid"], provider_id=provider_id,
            node_pool=node_labels.get(labels.NODEPOOL_LABEL),
            node_claim=claim_by_provider.get(provider_id) or claim_by_node.get(meta["name"]),
            instance_type=node_labels.get(labels.INSTANCE_TYPE_LABEL),
            capacity_type=node_labels.get(labels.CAPACITY_TYPE_LABEL),
            arch=node_labels.get(labels.ARCH_LABEL),
            zone=node_labels.get(labels.ZONE_LABEL),
        )
    return out


def _requirement_allows(requirements: list[dict[str, Any]], key: str, value: str) -> bool:
    for req in requirements:
        if req.get("key") != key:
            continue
        values = set(req.get("values") or [])
        op = req.get("operator")
        if (op == "In" and value not in values) or (op == "NotIn" and value in values) or op == "DoesNotExist":
            return False
    return True


def _type_allowed(requirements: list[dict[str, Any]], type_labels: dict[str, str]) -> bool:
    """Every pool requirement on a well-known instance label (type, family, generation, cpu, gpu, ...) holds for
    the type, with the scheduler's rules (docs/semantics.md §17.2); zone and capacity type are the offering's."""
    return all(match_requirement(r.get("key", ""), r.get("operator", ""), r.get("values") or (), type_labels)
               for r in requirements if r.get("key") in WELL_KNOWN_TYPE_KEYS)


def spot_replacement(node: NodeInfo, catalog: InstanceTypeCatalog, pool: dict[str, Any] | None) -> Replacement | None:
    """Instance types at least as large as the interrupted one, cheapest first, not the reclaimed type itself.

    Karpenter marks the interrupted spot offering unavailable and lets the scheduler choose; without the
    pods at hand we ask for the same shape, which always fits what ran on the node.
    """
    current = catalog.get(node.instance_type) if node.instance_type else None
    if current is None:
        return None
    reqs = (((pool or {}).get("spec") or {}).get("template") or {}).get("spec", {}).get("requirements") or []
    capacity = node.capacity_type or labels.CAPACITY_SPOT
    if not _requirement_allows(reqs, labels.CAPACITY_TYPE_LABEL, capacity):
        capacity = labels.CAPACITY_ON_DEMAND
    priced: list[tuple[float, str]] = []
    for it in catalog.instance_types:
        if it.arch != current.arch or it.cpu_cores < current.cpu_cores or it.memory_bytes < current.memory_bytes:
            continue
        if not _type_allowed(reqs, it.labels):
            continue
        offering = it.cheapest(None, {capacity})
        if offering is not None:
            priced.append((offering.price, it.name))
    priced.sort()
    names = [n for _, n in priced if n != current.name] or [n for _, n in priced]
    if not names:
        return None
    best = priced[[n for _, n in priced].index(names[0])][0]
    return Replacement(instance_types=names[:MAX_REPLACEMENT_TYPES], capacity_type=capacity, price=best)


class InterruptionDispatcher:
    """Clients come in: the Kubernetes gateway (blocking, used in threads), the catalog and two starters.

    `start_termination` signals-with-start `terminate-<uid>`; `start_prespin` starts `prespin-<uid>`.
    Both are thin wrappers over a Temporal client (see `temporal_starters`), injectable for tests.
    """

    def __init__(self, kube: KubeClient, catalog: InstanceTypeCatalog, start_termination: StartTermination,
                 start_prespin: StartPrespin, offerings: UnavailableOfferings | None = None) -> None:
        self._kube = kube
        self._catalog = catalog
        self._offerings = offerings  # a spot interruption marks the node's offering here (the worker's one cache)
        self._start_termination = start_termination
        self._start_prespin = start_prespin

    async def load_nodes(self) -> dict[str, NodeInfo]:
        return await asyncio.to_thread(self._load_nodes)

    def _load_nodes(self) -> dict[str, NodeInfo]:
        # Plain JSON instead of V1Node models: the intake is on the spot warning's two-minute clock.
        return index_nodes(self._kube.list_nodes(), self._kube.list_node_claims())

    async def dispatch(self, event: InterruptionEvent, nodes: dict[str, NodeInfo]) -> list[str]:
        """Act on every instance of the event; returns one action name per instance. Raises to ask for a retry."""
        return list(await asyncio.gather(*(self._one(event, iid, nodes.get(iid)) for iid in event.instance_ids)))

    async def _one(self, event: InterruptionEvent, instance_id: str, node: NodeInfo | None) -> str:
        if node is None:
            log.info("interruption %s for instance %s: no Node has that providerID; nothing to do",
                     event.kind, instance_id, extra={"message_id": event.message_id})
            return NO_NODE
        self._mark_reclaimed(event, node)
        pool = await asyncio.to_thread(self._kube.get_node_pool, node.node_pool) if node.node_pool else None
        annotations = ((pool or {}).get("metadata") or {}).get("annotations") or {}
        action = action_for(event, rebalance_mode(annotations.get(labels.REBALANCE_ANNOTATION)))
        if not node.name:  # a claim without a Node: no pods to re-home or tell, the instance just goes
            action = Action.TERMINATE if event.forceful else Action.IGNORE
        log.info("interruption %s for %s (%s): %s", event.kind, node.name or f"nodeclaim {node.node_claim}",
                 instance_id, action, extra={"message_id": event.message_id, "node": node.name})
        steps: list[Awaitable[Any]] = []
        if action is Action.PRESPIN_AND_TERMINATE and node.node_pool and pool is not None:
            replacement = spot_replacement(node, with_unavailable(self._catalog, self._offerings) or self._catalog,
                                           pool)
            if replacement is not None:  # first, alone: its workflow task is queued before the termination's
                await self._start_prespin(PrespinInput(
                    node_name=node.name, node_uid=node.uid, node_pool=node.node_pool, replacement=replacement,
                    reason=TERMINATION_REASONS[event.kind]))
            else:
                log.warning("no replacement type for %s (%s); terminating without pre-spin", node.name,
                            node.instance_type)
        if action in (Action.PRESPIN_AND_TERMINATE, Action.TERMINATE):
            steps.append(self._start_termination(TerminationInput(
                node_name=node.name, node_uid=node.uid, node_claim_name=node.node_claim, node_pool=node.node_pool,
                provider_id=node.provider_id, reason=TERMINATION_REASONS[event.kind], deadline=event.deadline,
                requested_by="interruption")))
            steps.append(asyncio.to_thread(record_disrupted, self._kube, node.name, node.node_claim, node.node_pool,
                                           message_type(event)))
        if action is not Action.IGNORE:
            steps.append(asyncio.to_thread(self._record_events, event, node,
                                           action in (Action.PRESPIN_AND_TERMINATE, Action.TERMINATE)))
        await asyncio.gather(*steps)
        return str(action)

    def _mark_reclaimed(self, event: InterruptionEvent, node: NodeInfo) -> None:
        """EC2 is taking this spot capacity back: no launch or plan of this worker uses the offering for 3
        minutes (Karpenter's interruption controller, markUnavailableOfferings)."""
        if event.kind is not InterruptionKind.SPOT_INTERRUPTION or self._offerings is None:
            return
        if node.instance_type and node.zone:
            self._offerings.mark(node.instance_type, node.zone, labels.CAPACITY_SPOT,
                                 UnavailableReason.SPOT_INTERRUPTION)

    def _record_events(self, event: InterruptionEvent, node: NodeInfo, terminating: bool) -> None:
        """The provider's events on the NodeClaim and the Node (interruption/events/events.go): what the message
        says, then TerminatingOnInterruption when it starts a termination. Deduplicated by the worker's Recorder
        and named by the message, so a redelivered message hits 409 on another worker instead of repeating."""
        reason = interruption_reason(event.kind, event.state)
        specs = [EventSpec(kind=kind, name=name, uid=uid, reason=reason, message=INTERRUPTION_MESSAGES[reason],
                           type=spec_of(reason, kind).type) for kind, name, uid in _objects(node)]
        if terminating:
            specs += [EventSpec(kind=kind, name=name, uid=uid, reason=EventReason.TERMINATING_ON_INTERRUPTION,
                                type="Warning", message=terminating_on_interruption(kind))
                      for kind, name, uid in _objects(node)]
        now = datetime.now(UTC)
        for spec in recorder_for(self._kube).fresh(specs):
            body = event_body(spec, now)
            key = hashlib.sha1(f"{event.message_id}/{event.kind}/{spec.kind}/{spec.name}/{spec.reason}".encode()
                               ).hexdigest()[:16]
            body["metadata"]["name"] = f"{spec.name}.{key}"
            self._kube.create_event(body)


def _objects(node: NodeInfo) -> list[tuple[str, str, str | None]]:
    """The NodeClaim (the provider's first event) and the Node (when one registered) an instance backs."""
    claim_uid = None if node.name else node.uid  # NodeInfo.uid is the Node's, else the NodeClaim's
    out: list[tuple[str, str, str | None]] = [("NodeClaim", node.node_claim, claim_uid)] if node.node_claim else []
    return out + ([("Node", node.name, node.uid)] if node.name else [])
