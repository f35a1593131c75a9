"""The Deployment controller: one ReplicaSet per pod template (named by its pod-template-hash), a rolling update
from the old ReplicaSets to the new one within maxSurge/maxUnavailable (or Recreate), and the Deployment's status
summed from its ReplicaSets' pods. The ReplicaSet controller (simulator/controllers.py) makes the pods."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from simulator.patch import deep_copy
from simulator.pods import condition_true, controller_ref, is_deleting, meta, pod_terminal
from simulator.resources import BY_KIND, ResourceType
from simulator.store import Store, now_rfc3339

DEPLOYMENTS = BY_KIND["Deployment"]
REPLICASETS = BY_KIND["ReplicaSet"]
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's safe encoding: no vowels, no look-alikes


def pod_template_hash(template: dict[str, Any]) -> str:
    """A stable 10-character hash of a pod template (what names a Deployment's ReplicaSet and labels its pods)."""
    n = int.from_bytes(hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()[:8], "big")
    out = []
    for _ in range(10):
        n, r = divmod(n, len(_ALPHABET))
        out.append(_ALPHABET[r])
    return "".join(out)


def without_hash(template: dict[str, Any]) -> dict[str, Any]:
    t = deep_copy(template or {})
    (t.get("metadata") or {}).get("labels", {}).pop(HASH_LABEL, None)
    return t


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """An int-or-percent (maxSurge rounds up, maxUnavailable down, as the Deployment controller does)."""
    if isinstance(value, str) and value.endswith("%"):
        share = total * float(value[:-1]) / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def _condition(prev: dict[str, dict[str, Any]], ctype: str, ok: bool, reason: str, message: str) -> dict[str, Any]:
    """A status condition that keeps its lastTransitionTime while its status stays."""
    status = "True" if ok else "False"
    before = prev.get(ctype) or {}
    since = before.get("lastTransitionTime") if before.get("status") == status else None
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": since or now_rfc3339()}


def _revision(obj: dict[str, Any]) -> int:
    try:
        return int((meta(obj).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


class Deployments:
    """Reconciled on the world's tick, before the ReplicaSet controller, whenever a Deployment or one of its
    ReplicaSets changed. It sees only the store, as a controller sees only the API server."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.by_uid: dict[str, tuple[str, str]] = {}
        self.dirty: set[str] = set()

    def on_change(self, rt: ResourceType, old: dict | None, new: dict | None) -> None:
        if rt is DEPLOYMENTS:
            uid = meta(new or old or {}).get("uid")
            if new is None:
                self.by_uid.pop(uid, None)
                self.dirty.discard(uid)
                return
            self.by_uid[uid] = (meta(new).get("namespace") or "", meta(new)["name"])
            if old is None or old.get("spec") != new.get("spec"):
                self.dirty.add(uid)
        elif rt is REPLICASETS:
            ref = controller_ref(new or old or {})
            if ref and ref.get("uid") in self.by_uid and (
                    new is None or old is None or old.get("status") != new.get("status")):
                self.dirty.add(ref["uid"])

    def reconcile(self) -> None:
        while self.dirty:
            key = self.by_uid.get(self.dirty.pop())
            dep = self.store.get(DEPLOYMENTS, *key) if key else None
            if dep is not None and not is_deleting(dep):
                self._sync(dep)

    # ---- one Deployment ----------------------------------------------------------------------------------
    def _owned(self, dep: dict[str, Any]) -> list[dict[str, Any]]:
        uid = meta(dep)["uid"]
        return [rs for rs in self.store.list(REPLICASETS, meta(dep).get("namespace"))
                if (controller_ref(rs) or {}).get("uid") == uid and not is_deleting(rs)]

    def _sync(self, dep: dict[str, Any]) -> None:
        owned = self._owned(dep)
        template = (dep.get("spec") or {}).get("template") or {}
        new = next((rs for rs in owned if without_hash((rs.get("spec") or {}).get("template")) == template), None)
        old = sorted((rs for rs in owned if rs is not new), key=_revision)
        if new is None:
            new = self._create_rs(dep, template, max((_revision(rs) for rs in owned), default=0) + 1)
        if _revision(dep) != _revision(new):
            self._annotate(dep, _revision(new))
            dep = self.store.get(DEPLOYMENTS, meta(dep).get("namespace") or "", meta(dep)["name"]) or dep
        self._rollout(dep, new, old)
        self._status(dep, new, old)

    def _create_rs(self, dep: dict[str, Any], template: dict[str, Any], revision: int) -> dict[str, Any]:
        h = pod_template_hash(template)
        spec = dep.get("spec") or {}
        tmpl = deep_copy(template)
        tmpl.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        selector = deep_copy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = h
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
            "name": f"{meta(dep)['name']}-{h}", "namespace": meta(dep).get("namespace") or "default",
            "labels": dict(tmpl["metadata"]["labels"]), "annotations": {REVISION: str(revision)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta(dep)["name"],
                                 "uid": meta(dep)["uid"], "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"replicas": 0, "minReadySeconds": spec.get("minReadySeconds", 0), "selector": selector,
                     "template": tmpl}}
        return self.store.create(REPLICASETS, rs)

    def _annotate(self, dep: dict[str, Any], revision: int) -> None:
        new = deep_copy(dep)
        new["metadata"].setdefault("annotations", {})[REVISION] = str(revision)
        self.store.replace(DEPLOYMENTS, new)

    def _pods(self, rs: dict[str, Any]) -> tuple[int, int]:
        """(active pods, ready pods) of a ReplicaSet."""
        pods = [p for p in self.store.pods_owned_by(meta(rs)["uid"]) if not is_deleting(p)
                and not pod_terminal(p)]
        return len(pods), sum(1 for p in pods if condition_true(p, "Ready"))

    def _rollout(self, dep: dict[str, Any], new: dict[str, Any], old: list[dict[str, Any]]) -> None:
        spec = dep.get("spec") or {}
        desired = int(spec.get("replicas", 1))
        strategy = spec.get("strategy") or {}
        old_total = sum(int((rs.get("spec") or {}).get("replicas", 0)) for rs in old)
        if strategy.get("type") == "Recreate":
            for rs in old:
                self._set_replicas(rs, 0)
            if not any(self._pods(rs)[0] for rs in old):
                self._set_replicas(new, desired)
            return
        rolling = strategy.get("rollingUpdate") or {}
        surge = scaled_value(rolling.get("maxSurge", "25%"), desired, round_up=True)
        unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), desired, round_up=False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        current = int((new.get("spec") or {}).get("replicas", 0))
        target = desired if not old_total else min(desired, max(current, desired + surge - old_total))
        self._set_replicas(new, target)
        ready = sum(self._pods(rs)[1] for rs in [new, *old])
        removable = ready - (desired - unavailable)
        for rs in old:
            have = int((rs.get("spec") or {}).get("replicas", 0))
            rs_ready = self._pods(rs)[1]
            cut = min(have, max(have - rs_ready, 0) + max(removable, 0))
            removable -= max(cut - max(have - rs_ready, 0), 0)
            self._set_replicas(rs, have - cut)

    def _set_replicas(self, rs: dict[str, Any], replicas: int) -> None:
        if int((rs.get("spec") or {}).get("replicas", 1)) == replicas:
            return
        new = deep_copy(rs)
        new["spec"]["replicas"] = replicas
        new["metadata"]["generation"] = int(new["metadata"].get("generation", 1)) + 1
        self.store.replace(REPLICASETS, new)

    def _status(self, dep: dict[str, Any], new: dict[str, Any], old: list[dict[str, Any]]) -> None:
        desired = int((dep.get("spec") or {}).get("replicas", 1))
        counts = [self._pods(rs) for rs in [new, *old]]
        total, ready = sum(c[0] for c in counts), sum(c[1] for c in counts)
        done = counts[0][0] == desired and total == desired and ready >= desired
        available = ready >= desired - self._unavailable(dep, desired)
        name = meta(new)["name"]
        prev = {c.get("type"): c for c in (dep.get("status") or {}).get("conditions") or []}
        status: dict[str, Any] = {
            "observedGeneration": meta(dep).get("generation", 1), "replicas": total,
            "updatedReplicas": counts[0][0], "readyReplicas": ready, "availableReplicas": ready,
            "unavailableReplicas": max(desired - ready, 0), "conditions": [
                _condition(prev, "Available", available, "MinimumReplicasAvailable" if available
                           else "MinimumReplicasUnavailable", "Deployment has minimum availability." if available
                           else "Deployment does not have minimum availability."),
                _condition(prev, "Progressing", True, "NewReplicaSetAvailable" if done else "ReplicaSetUpdated",
                           f'ReplicaSet "{name}" has successfully progressed.' if done
                           else f'ReplicaSet "{name}" is progressing.')]}
        if status != dep.get("status"):
            fresh = deep_copy(dep)
            fresh["status"] = status
            self.store.replace(DEPLOYMENTS, fresh)

    @staticmethod
    def _unavailable(dep: dict[str, Any], desired: int) -> int:
        rolling = ((dep.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
        return scaled_value(rolling.get("maxUnavailable", "25%"), desired, round_up=False)
