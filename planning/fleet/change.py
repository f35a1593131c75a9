"""A fleet rollout's change in one cluster, as pure decisions on the cluster's objects (docs/fleet.md §2).

`*_patch` decide the one merge patch that applies the change to an object together with its record (so no
change is ever written without the record saying which rollout wrote it and what was there before); the
`observe_*` functions count what the cluster's worker reports back. The activity (activities/fleet.py) only
reads and writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from api import labels as L
from api.fleet import RECORD_ANNOTATION, FleetChange, record_of
from api.fleet_observation import PoolObservation
from api.nodepool import load_nodepool
from api.rollout_state import parse_rollout_note
from planning.lifecycle.conditions import is_true

Obj = dict[str, Any]
INITIALIZED, DRIFTED = "Initialized", "Drifted"
MAX_POD_EXAMPLES = 5


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _record(rollout_id: str, stage: str, previous: Any) -> str:
    return json.dumps({"id": rollout_id, "stage": stage, "previous": previous}, sort_keys=True,
                      separators=(",", ":"))


def ours(obj: Obj, rollout_id: str) -> bool:
    return (record_of(obj) or {}).get("id") == rollout_id


def node_class_patch(node_class: Obj, change: FleetChange, rollout_id: str, stage: str) -> Obj | None:
    """The patch setting the class's amiSelectorTerms with its record; None when it already carries both."""
    target = change.node_class.ami_selector_terms if change.node_class else None
    current = (node_class.get("spec") or {}).get("amiSelectorTerms")
    if target is None or (ours(node_class, rollout_id) and current == target):
        return None
    previous = (record_of(node_class) or {}).get("previous") if ours(node_class, rollout_id) else current
    return {"metadata": {"annotations": {RECORD_ANNOTATION: _record(rollout_id, stage, previous)}},
            "spec": {"amiSelectorTerms": target}}


def node_pool_patch(pool: Obj, change: FleetChange, rollout_id: str, stage: str) -> Obj | None:
    """The patch merging the template change into the pool with its record; None when already applied."""
    if change.node_pool_template is None:
        return None
    current = (pool.get("spec") or {}).get("template") or {}
    target = merge_patch(current, change.node_pool_template.patch)
    if ours(pool, rollout_id) and current == target:
        return None
    previous = (record_of(pool) or {}).get("previous") if ours(pool, rollout_id) else current
    return {"metadata": {"annotations": {RECORD_ANNOTATION: _record(rollout_id, stage, previous)}},
            "spec": {"template": change.node_pool_template.patch}}


def _class_ref(pool: Obj) -> str:
    return ((((pool.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}).get(
        "name", "")


def _image_ids(node_class: Obj | None) -> set[str]:
    return {a.get("id", "") for a in ((node_class or {}).get("status") or {}).get("amis") or []}


def observe_pool(name: str, pool: Obj | None, claims: Iterable[Obj], change: FleetChange, rollout_id: str,
                 node_class: Obj | None = None) -> PoolObservation:
    """Count a target pool: its live claims, how many run the change, drifted and launching ones."""
    if pool is None:
        return PoolObservation(name=name, exists=False)
    if change.node_class is not None:
        applied = node_class is not None and ours(node_class, rollout_id) and _class_ref(pool) == change.node_class.name
        images = _image_ids(node_class)
        updated = lambda c: (c.get("status") or {}).get("imageID") in images  # noqa: E731
    else:
        applied = ours(pool, rollout_id)
        want = load_nodepool(pool).template_hash()
        updated = lambda c: ((c.get("metadata") or {}).get("annotations") or {}).get(  # noqa: E731
            L.TEMPLATE_HASH_ANNOTATION) == want
    live = [c for c in claims if not (c.get("metadata") or {}).get("deletionTimestamp")]
    note = parse_rollout_note(((pool.get("metadata") or {}).get("annotations") or {}).get(L.ROLLOUT_ANNOTATION))
    return PoolObservation(name=name, applied=applied, nodes=len(live), updated=sum(1 for c in live if updated(c)),
                           drifted=sum(1 for c in live if is_true(c, DRIFTED)),
                           launching=sum(1 for c in live if not is_true(c, INITIALIZED)), rollout=note)


def node_class_state(node_class: Obj | None) -> tuple[bool, bool, str]:
    """(resolved for its current generation, Ready, Ready's message) of an EC2NodeClass."""
    if node_class is None:
        return False, False, ""
    generation = (node_class.get("metadata") or {}).get("generation")
    conditions = ((node_class.get("status") or {}).get("conditions")) or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    resolved = ready is not None and generation is not None and ready.get("observedGeneration") == generation
    return resolved, ready is not None and ready.get("status") == "True", (ready or {}).get("message") or ""


def _pod_ready(pod: Obj) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def observe_pods(pods: Iterable[Obj]) -> tuple[int, int, list[str]]:
    """(pending, bound but not Running and Ready, examples) over the pods not finished and not being deleted."""
    pending = not_ready = 0
    examples: list[str] = []
    for pod in pods:
        meta, phase = pod.get("metadata") or {}, (pod.get("status") or {}).get("phase")
        if meta.get("deletionTimestamp") or phase in ("Succeeded", "Failed"):
            continue
        if not (pod.get("spec") or {}).get("nodeName"):
            pending += 1
        elif phase != "Running" or not _pod_ready(pod):
            not_ready += 1
        else:
            continue
        if len(examples) < MAX_POD_EXAMPLES:
            examples.append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return pending, not_ready, examples
