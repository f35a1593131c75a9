"""Garbage collection (Karpenter's nodeclaim/garbagecollection, core and AWS; docs/karpenter-reference.md
§8): an instance of this cluster that no NodeClaim accounts for is terminated once 30 s old, and a
registered NodeClaim whose instance is gone is deleted unless its Node is still Ready."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from api.labels import NODECLAIM_TAG, NODECLAIM_UID_TAG
from api.nodeclaim import REGISTERED
from api.provider_id import instance_id_from_provider_id
from api.timestamps import parse_time
from planning.lifecycle.conditions import Obj, is_true

INSTANCE_GRACE = timedelta(seconds=30)
LIVE_STATES = frozenset({"pending", "running", "stopping", "stopped"})


def tags_of(instance: Mapping[str, Any]) -> dict[str, str]:
    return {t.get("Key", ""): t.get("Value", "") for t in instance.get("Tags") or []}


def _claimed(claims: Iterable[Obj]) -> tuple[set[str], dict[str, str]]:
    """(instance ids named by claims' providerIDs, claim name -> uid)."""
    ids: set[str] = set()
    names: dict[str, str] = {}
    for c in claims:
        meta = c.get("metadata") or {}
        names[meta.get("name", "")] = meta.get("uid", "")
        iid = instance_id_from_provider_id((c.get("status") or {}).get("providerID"))
        if iid:
            ids.add(iid)
    return ids, names


def _is_claimed(instance: Mapping[str, Any], ids: set[str], names: dict[str, str]) -> bool:
    if instance.get("InstanceId") in ids:
        return True
    tags = tags_of(instance)
    owner = tags.get(NODECLAIM_TAG)
    return owner in names and tags.get(NODECLAIM_UID_TAG, names[owner]) == names[owner]


def claimed_by(instance: Mapping[str, Any], claims: Iterable[Obj]) -> bool:
    """Whether one of `claims` accounts for the instance, by the rule `orphan_instances` applies."""
    ids, names = _claimed(claims)
    return _is_claimed(instance, ids, names)


def orphan_instances(instances: Sequence[Mapping[str, Any]], claims: Sequence[Obj], now: datetime,
                     grace: timedelta = INSTANCE_GRACE) -> list[Mapping[str, Any]]:
    """Live instances older than `grace` that no claim names: not by providerID, and not by the claim tag of a
    claim that still exists (a claim whose launch record is not written yet still owns its instance)."""
    ids, names = _claimed(claims)
    out = []
    for inst in instances:
        if (inst.get("State") or {}).get("Name") not in LIVE_STATES or _is_claimed(inst, ids, names):
            continue
        launched = parse_time(inst.get("LaunchTime"))  # a datetime from boto3, a string across a payload
        if launched is not None and now - launched < grace:
            continue
        out.append(inst)
    return out


def claims_without_instance(claims: Sequence[Obj], live_ids: set[str], ready_nodes: set[str]) -> list[Obj]:
    """Registered, not deleting claims whose instance is not live, unless their Node is Ready."""
    out = []
    for c in claims:
        meta, status = c.get("metadata") or {}, c.get("status") or {}
        if meta.get("deletionTimestamp") or not is_true(c, REGISTERED):
            continue
        iid = instance_id_from_provider_id(status.get("providerID"))
        if not iid or iid in live_ids or status.get("nodeName", "") in ready_nodes:
            continue
        out.append(c)
    return out
